"""``%nsight doctor``'s PM sampling line: available, or the exact reason and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from nsight_lab.backends.pm import availability, errors
from nsight_lab.backends.pm.metrics import MetricCheck
from nsight_lab.cli.doctor import run_checks
from nsight_lab.errors import BackendUnavailableError
from nsight_lab.gpu import stack


class FakeTorch:
    class cuda:  # noqa: N801  (torch.cuda's name)
        @staticmethod
        def current_device() -> int:
            return 0

        @staticmethod
        def get_device_properties(_index: int) -> Any:
            return type("Props", (), {"name": "NVIDIA H200"})()


class Host:
    chip = "GH100"

    def __init__(self, per_pass: int) -> None:
        self.per_pass = per_pass

    def passes(self, metrics: Any) -> int:
        return -(-len(metrics) // self.per_pass)

    def names(self) -> list[str]:
        return []


@pytest.fixture
def stack_works(monkeypatch: pytest.MonkeyPatch) -> availability.PmChecks:
    monkeypatch.setattr(availability, "cupti_version", lambda: "13.4.0")
    monkeypatch.setattr(availability, "require_cuda", lambda _: FakeTorch)
    monkeypatch.setattr(
        stack, "counter_permission", lambda: stack.StackStatus(ok=True, detail="")
    )
    checks = availability.PmChecks()
    checks.startable[0] = None
    return checks


def test_without_cupti_python_the_doctor_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(availability, "cupti_version", lambda: None)
    line = {c.name: c for c in run_checks()}["PM sampling"]
    assert line.status == "missing"
    assert line.detail == "cupti-python is not installed"
    assert "pip install 'nsight-lab[pm]'" in line.hint


def test_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_gpu(_: str) -> None:
        msg = "backend 'pm' is unavailable: no CUDA GPU visible; run on a GPU"
        raise BackendUnavailableError(msg)

    monkeypatch.setattr(availability, "cupti_version", lambda: "13.4.0")
    monkeypatch.setattr(availability, "require_cuda", no_gpu)
    found = availability.diagnose()
    assert (found.status, found.detail, found.hint) == (
        "missing",
        "no CUDA GPU visible",
        "run on a GPU",
    )


def test_without_counter_permission(
    stack_works: availability.PmChecks, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        stack, "counter_permission", lambda: stack.StackStatus(ok=False, detail="")
    )
    found = availability.diagnose(stack_works)
    assert found.status == "error"
    assert found.hint == errors.PERMISSION
    assert "NVreg_RestrictProfilingToAdminUsers=0" in found.hint


def test_when_pm_sampling_does_not_start_the_reason_is_cuptis(
    stack_works: availability.PmChecks,
) -> None:
    stack_works.startable[0] = str(
        errors.explain(
            RuntimeError("could not load the nvperf* libraries"), started=False
        )
    )
    found = availability.diagnose(stack_works)
    assert found.status == "error"
    assert found.detail == f"PM sampling does not start: {errors.NVPERF}"


def test_an_old_driver_or_gpu_is_named_with_the_fix(
    stack_works: availability.PmChecks,
) -> None:
    class CuptiError(RuntimeError):
        status = type("Status", (), {"name": "ERROR_NOT_COMPATIBLE"})()

    stack_works.startable[0] = str(
        errors.explain(CuptiError("pm_sampling_enable"), started=False)
    )
    found = availability.diagnose(stack_works)
    assert found.status == "error"
    assert errors.OLD_STACK in found.detail
    assert "ERROR_NOT_COMPATIBLE" in found.detail
    assert "update the driver, or use --backend ncu" in found.detail


@pytest.mark.parametrize(("per_pass", "status"), [(8, "ok"), (3, "warn")])
def test_when_it_works_it_names_the_chip_and_the_defaults(
    stack_works: availability.PmChecks, per_pass: int, status: str
) -> None:
    stack_works.by_device["NVIDIA H200"] = MetricCheck("NVIDIA H200", Host(per_pass))
    found = availability.diagnose(stack_works)
    assert found.status == status
    assert "GH100 (NVIDIA H200), cupti-python 13.4.0" in found.detail
    if status == "warn":
        assert "fit together" in found.detail
        assert "notes the rest" in found.hint


def test_metric_verdicts_are_kept_in_the_run_store() -> None:
    cache = availability.StoreCache()
    assert cache.cache_get("pm-metrics:X") is None
    cache.cache_put("pm-metrics:X", {"version": 1, "chip": "GH100"})
    assert cache.cache_get("pm-metrics:X") == {"version": 1, "chip": "GH100"}
    check = MetricCheck("X", Host(8), cache)
    assert check.why_not(("dram__bytes_read.sum",)) is None
    assert "dram__bytes_read.sum" in cache.cache_get("pm-metrics:X")["accepted"]
