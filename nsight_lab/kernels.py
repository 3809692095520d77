"""How the kernels of one region become one value, for every per-kernel backend.

A backend that sees each kernel (``cupti``, ``ncu``, ``pm``) leaves out the kernels of
``--ignore-kernels`` (nsight-python's ``ignore_kernel_list``) and folds the rest with
:class:`KernelFold` (``--combine``: ``sum``, ``max``, ``first``, ``single``, or a
binary function folded over the kernels in launch order, nsight-python's
``combine_kernel_metrics``). ``--replay-mode range`` takes the region as one range: its
span, from the first kernel's start to the last one's end, where the backend has the
timestamps.

``single`` (nsight-python's default: one kernel per region) folds like ``sum`` while
the runs go; :func:`check_kernel_counts` then raises nsight-python's errors over the
whole profile, in its order: first a region whose runs launched different numbers of
kernels, then a region with more than one. The backends that time a region's span
(``events``, ``cpu``) see no kernels, and nothing is checked for them.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nsight_lab.errors import MeasurementError
from nsight_lab.options.profile import BUILTIN_FOLDS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.options import ProfileOptions

__all__ = ["BUILTIN_FOLDS", "KernelCountError", "KernelFold", "check_kernel_counts"]


class KernelCountError(MeasurementError):
    """A region launched more kernels than the profile allows (nsight-python's error).

    A ``RuntimeError``, as nsight-python raises it.
    """


@dataclass(frozen=True)
class KernelFold:
    """The ``--combine``, ``--ignore-kernels`` and ``--replay-mode`` of a profile."""

    combine: str = "sum"
    """A word of :data:`BUILTIN_FOLDS` or the name of :attr:`function`."""
    function: Callable[[float, float], float] | None = field(default=None, repr=False)
    """The binary function ``combine`` names, when it is not a built-in word."""
    ignore: frozenset[str] = frozenset()
    """Kernel names left out."""
    replay_mode: str = "kernel"
    """``range``: the region is one range (its span, where timestamps are known)."""

    @classmethod
    def of(cls, options: ProfileOptions) -> KernelFold:
        """The fold a profile's options ask for."""
        return cls(
            combine=options.combine,
            function=options.combine_fn,
            ignore=frozenset(options.ignore_kernels),
            replay_mode=options.replay_mode,
        )

    def keep(self, name: str) -> bool:
        """Whether kernel ``name`` counts (it is not in ``--ignore-kernels``)."""
        return name not in self.ignore

    def fold(self, values: Sequence[float]) -> float:
        """Fold the values of a region's kept kernels, in launch order, into one.

        No kernels fold to 0.

        Raises:
            MeasurementError: ``combine`` names a function that was not given.
            Exception: Whatever the user's function raised.
        """
        if not values:
            return 0.0
        if self.combine in {"sum", "single"}:
            return float(sum(values))
        if self.combine == "max":
            return float(max(values))
        if self.combine == "first":
            return float(values[0])
        if self.function is None:
            msg = (
                f"--combine {self.combine}: the function was not resolved; define "
                f"def {self.combine}(x, y) in the notebook"
            )
            raise MeasurementError(msg)
        return float(functools.reduce(self.function, values))


def check_kernel_counts(records: Sequence[RunRecord], options: ProfileOptions) -> None:
    """Raise nsight-python's errors for regions with several or varying kernels.

    Only for ``--combine single`` with ``--replay-mode kernel`` and for records whose
    backend saw kernels.

    Raises:
        KernelCountError: A region launched different numbers of kernels across runs
            ("Expect same number of kernels per run"), or more than one ("More than
            one (total=N) kernel is launched within the A annotation"), with
            nsight-python's wording and its remedies.
    """
    if options.combine != "single" or options.replay_mode == "range":
        return
    counts: dict[str, list[int]] = defaultdict(list)
    names: dict[str, set[str]] = defaultdict(set)
    for record in records:
        counts[record.annotation].append(len(record.kernels))
        names[record.annotation].update(record.kernels)
    for annotation, per_run in counts.items():
        if not any(per_run):  # this backend sees no kernels
            continue
        if len(set(per_run)) > 1:
            average = sum(per_run) / len(per_run)
            msg = (
                "Expect same number of kernels per run. "
                f"Got average of {average} per run (region {annotation!r})"
            )
            raise KernelCountError(msg)
        if per_run[0] > 1:
            listed = "\n".join(sorted(names[annotation]))
            msg = (
                f"More than one (total={per_run[0]}) kernel is launched within the "
                f"{annotation} annotation.\nWe expect one kernel per annotation.\n"
                "Try one of the following solutions:\n"
                "  - Use `replay_mode='range'` to profile the entire annotated range "
                "instead of individual kernels\n"
                "  - Use `combine_kernel_metrics = lambda x, y: ...` to combine the "
                "metrics of multiple kernels (%%nsight: --combine sum or a function)\n"
                "  - Add some of the kernels to the ignore_kernel_list "
                f"(%%nsight: --ignore-kernels)\nKernels are:\n{listed}"
            )
            raise KernelCountError(msg)
