"""nsight-python's ``tests/test_api_params.py`` scenarios, on nsight-lab: same errors.

The config scenarios need no GPU: they fail before anything runs, on any backend.
The kernel-count scenarios need a backend that sees kernels: with nsight-python's own
arguments (a DRAM counter, so the ncu path) they run here under the stand-in ``ncu``
(``tests/fixtures/fake_ncu.py``, which launches as many kernels per region as it is
told), on a GPU through ``cupti`` (``pytest -m gpu``), and the rule behind them
(``kernels.check_kernel_counts``) is checked on records too.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import nsight_lab as nsight
from nsight_lab.contract.records import RunRecord
from nsight_lab.kernels import KernelCountError, check_kernel_counts
from nsight_lab.options import ProfileOptions

SIZES = [(2**i,) for i in range(10, 13)]

CONFIG_SCENARIOS: dict[str, dict[str, Any]] = {
    "no_configs": {
        "decorator_configs": None,
        "expected": "You have provided no configs. Provide configs at decoration "
        "time or at runtime.",
    },
    "empty_configs": {"decorator_configs": [], "expected": "configs cannot be empty"},
    "both_configs": {
        "runtime_configs": [(1024,), (2048,)],
        "expected": "You have provided configs at decoration time and at runtime. "
        "Provide configs at decoration time or at runtime.",
    },
    "mismatched_lengths": {
        "decorator_configs": [(1024,), (2048, 512), (4096,)],
        "expected": "All configs must have the same number of arguments. Found "
        "lengths: [1, 2, 1]",
    },
    "wrong_arg_count": {
        "decorator_configs": [(1024, 512), (2048, 1024)],
        "expected": "Configs have 2 arguments, but function expects 1",
    },
}


NSIGHT_PYTHON_KWARGS: dict[str, Any] = {
    "runs": 1,
    "metrics": ["dram__bytes.sum.per_second"],
    "replay_mode": "kernel",
    "clock_control": "none",
    "cache_control": "all",
    "thermal_mode": "auto",
    "verbosity": nsight.VerbosityLevel.SILENT,
}
"""The arguments nsight-python's scenarios give ``analyze.kernel``."""


def _benchmark(kernel_kwargs: dict[str, Any]) -> Any:
    @nsight.annotate("einsum")
    def einsum(a: list[int], b: list[int]) -> int:
        return sum(x * y for x, y in zip(a, b, strict=True))

    @nsight.analyze.kernel(**kernel_kwargs)
    def run_benchmark(n: int) -> None:
        a = list(range(n))
        with nsight.annotate("matmul"):
            sum(a)
        einsum(a, a)
        with nsight.annotate("linear"):
            sorted(a)

    return run_benchmark


@pytest.mark.parametrize("name", sorted(CONFIG_SCENARIOS))
def test_config_validation_errors(name: str) -> None:
    scenario = CONFIG_SCENARIOS[name]
    kwargs = dict(NSIGHT_PYTHON_KWARGS)
    if "decorator_configs" in scenario:
        if scenario["decorator_configs"] is not None:
            kwargs["configs"] = scenario["decorator_configs"]
    else:
        kwargs["configs"] = SIZES
    run_benchmark = _benchmark(kwargs)
    runtime = scenario.get("runtime_configs")
    with pytest.raises(nsight.exceptions.ProfilerException) as caught:
        run_benchmark(configs=runtime) if runtime else run_benchmark()
    assert re.search(re.escape(scenario["expected"]), str(caught.value), re.IGNORECASE)


def _records(counts: dict[str, list[int]]) -> list[RunRecord]:
    return [
        RunRecord(
            session_id=1,
            config_index=run,
            config={"n": 1024 * (run + 1)},
            run_index=0,
            annotation=region,
            duration_ns=1000.0,
            backend="cupti",
            kernels=tuple(f"kernel_{k}" for k in range(count)),
        )
        for region, per_run in counts.items()
        for run, count in enumerate(per_run)
    ]


def test_kernel_counts_give_nsight_pythons_errors_in_its_order() -> None:
    single = ProfileOptions(combine="single")
    with pytest.raises(RuntimeError, match="Expect same number of kernels per run"):
        check_kernel_counts(_records({"variable_kernels": [1, 2]}), single)
    with pytest.raises(RuntimeError, match=r"More than one .* kernel is launched"):
        check_kernel_counts(_records({"multiple_kernels": [2]}), single)
    # One kernel per region, a combining function, range replay, or a backend that
    # sees no kernels: nothing to refuse.
    check_kernel_counts(_records({"one": [1, 1]}), single)
    check_kernel_counts(_records({"x": [2, 2]}), ProfileOptions(combine="sum"))
    check_kernel_counts(
        _records({"x": [2, 2]}), ProfileOptions(combine="single", replay_mode="range")
    )
    check_kernel_counts(_records({"x": [0, 0]}), single)
    assert issubclass(KernelCountError, RuntimeError)


RUNTIME_SCENARIOS = {
    "inconsistent_kernel_counts": ("variable_kernels", "Expect same number of kernels"),
    "multiple_kernels_no_combine": ("multiple_kernels", "More than one .* kernel is"),
}


@pytest.mark.usefixtures("fake_ncu")
@pytest.mark.parametrize("name", sorted(RUNTIME_SCENARIOS))
def test_runtime_extraction_errors_on_the_ncu_path(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch", reason="the isolated ncu child ships with cloudpickle")
    kind, expected = RUNTIME_SCENARIOS[name]
    # nsight-python's benchmarks launch a matmul, and an add for n >= 2048 (always,
    # for multiple_kernels): the stand-in ncu profiles that many kernels per config.
    configs = [(1024,), (2048,)] if kind == "variable_kernels" else [(2048,)]
    counts = [1 + (kind == "multiple_kernels" or n >= 2048) for (n,) in configs]
    monkeypatch.setenv("FAKE_NCU_KERNELS_BY_CONFIG", ",".join(map(str, counts)))

    @nsight.analyze.kernel(configs=configs, **NSIGHT_PYTHON_KWARGS)
    def run_benchmark(n: int) -> None:
        with nsight.annotate(kind):
            sum(range(n))

    with pytest.raises(RuntimeError) as caught:
        run_benchmark()
    assert re.search(expected, str(caught.value), re.IGNORECASE)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(RUNTIME_SCENARIOS))
def test_runtime_extraction_errors(name: str) -> None:
    import torch

    kind, expected = RUNTIME_SCENARIOS[name]
    configs = [(1024,), (2048,)] if kind == "variable_kernels" else [(2048,)]

    @nsight.analyze.kernel(
        configs=configs,
        runs=1,
        backend="cupti",
        verbosity=nsight.VerbosityLevel.SILENT,
    )
    def run_benchmark(n: int) -> None:
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        with nsight.annotate(kind):
            _ = a @ b
            if kind == "multiple_kernels" or n >= 2048:
                _ = a + b

    with pytest.raises(RuntimeError) as caught:
        run_benchmark()
    assert re.search(expected, str(caught.value), re.IGNORECASE)
