"""nsight_lab.kernels: how a region's kernels fold into one value, and the count check.

The fold through the cupti backend (sum, ignore, a function, range replay) is in
tests/api/test_kernel.py and nsight-python's two errors in tests/api/test_params.py;
here: the other built-in words, no kernels, an unresolved function, the options a fold
is made of, and what the errors say.
"""

from __future__ import annotations

import operator

import pytest

from nsight_lab.contract.records import RunRecord
from nsight_lab.errors import MeasurementError
from nsight_lab.kernels import (
    BUILTIN_FOLDS,
    KernelCountError,
    KernelFold,
    check_kernel_counts,
)
from nsight_lab.options import ProfileOptions

VALUES = (3.0, 1.0, 2.0)  # kernel values in launch order


@pytest.mark.parametrize(
    ("combine", "expected"),
    [("sum", 6.0), ("single", 6.0), ("max", 3.0), ("first", 3.0)],
)
def test_each_builtin_word_folds_the_kernels_in_launch_order(combine, expected):
    assert combine in BUILTIN_FOLDS
    assert KernelFold(combine=combine).fold(VALUES) == expected


def test_first_means_the_first_launched_not_the_smallest():
    assert KernelFold(combine="first").fold([5.0, 1.0]) == 5.0


@pytest.mark.parametrize("combine", [*BUILTIN_FOLDS, "unresolved"])
def test_no_kernels_fold_to_zero_whatever_the_combine(combine):
    assert KernelFold(combine=combine).fold([]) == 0.0


def test_a_function_is_folded_left_to_right():
    fold = KernelFold(combine="minus", function=operator.sub)
    assert fold.fold([10.0, 3.0, 2.0]) == 5.0  # (10 - 3) - 2, not 10 - (3 - 2)
    assert fold.fold([7.0]) == 7.0  # one kernel: the function is not called


def test_a_named_function_that_was_not_given_says_what_to_define():
    with pytest.raises(MeasurementError) as caught:
        KernelFold(combine="geomean").fold([1.0, 2.0])
    message = str(caught.value)
    assert "--combine geomean" in message
    assert "def geomean(x, y)" in message
    assert "\n" not in message


def test_the_users_function_error_is_raised_unchanged():
    def broken(_x: float, _y: float) -> float:
        msg = "user bug"
        raise ZeroDivisionError(msg)

    with pytest.raises(ZeroDivisionError, match="user bug"):
        KernelFold(combine="broken", function=broken).fold([1.0, 2.0])


def test_a_fold_is_made_of_the_profiles_options():
    options = ProfileOptions(
        combine="add",
        combine_fn=operator.add,
        ignore_kernels=("flush", "memset"),
        replay_mode="range",
    )
    fold = KernelFold.of(options)
    assert fold == KernelFold(
        combine="add",
        function=operator.add,
        ignore=frozenset({"flush", "memset"}),
        replay_mode="range",
    )
    assert fold.keep("gemm")
    assert not fold.keep("flush")
    assert KernelFold.of(ProfileOptions()) == KernelFold()  # the defaults agree


def _records(
    annotation: str, kernels_per_run: list[tuple[str, ...]]
) -> list[RunRecord]:
    return [
        RunRecord(
            session_id=1,
            config_index=0,
            config={},
            run_index=run,
            annotation=annotation,
            duration_ns=1.0,
            backend="cupti",
            kernels=kernels,
        )
        for run, kernels in enumerate(kernels_per_run)
    ]


SINGLE = ProfileOptions(combine="single")


def test_more_than_one_kernel_lists_them_sorted_with_the_remedies():
    records = _records("step", [("relu", "gemm", "bias"), ("relu", "gemm", "bias")])
    with pytest.raises(KernelCountError) as caught:
        check_kernel_counts(records, SINGLE)
    message = str(caught.value)
    assert message.startswith(
        "More than one (total=3) kernel is launched within the step"
    )
    assert message.endswith("Kernels are:\nbias\ngemm\nrelu")
    for remedy in ("replay_mode='range'", "--combine sum", "--ignore-kernels"):
        assert remedy in message


def test_a_region_with_kernels_in_some_runs_only_varies():
    # One run saw no kernel: the region is checked (it is not a span-only backend).
    records = _records("step", [(), ("gemm",)])
    with pytest.raises(
        KernelCountError, match=r"Got average of 0\.5 per run \(region 'step'\)"
    ):
        check_kernel_counts(records, SINGLE)


def test_regions_are_checked_apart():
    # "a" launches one kernel per run and "b" none: neither is refused, though the
    # profile as a whole sees varying numbers of kernels per record.
    records = [*_records("a", [("k",), ("k",)]), *_records("b", [(), ()])]
    check_kernel_counts(records, SINGLE)
