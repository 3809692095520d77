"""Tests of nsight_lab.cli.doctor on the machine they run on (usually without a GPU)."""

from __future__ import annotations

import json
import os
import stat
from typing import get_args

import pytest

from nsight_lab.cli import doctor, doctor_text
from nsight_lab.cli.doctor import run_checks
from nsight_lab.cli.doctor_text import Check, checks_to_json, format_checks
from nsight_lab.contract.registry import backend_ids, probe_all
from nsight_lab.errors import BackendUnavailableError
from nsight_lab.gpu import ncu as _ncu_tools
from nsight_lab.gpu import permission
from nsight_lab.gpu import stack as gpu_stack

TOPICS = [
    "GPU",
    "driver",
    "NVML",
    "torch",
    "ncu",
    "ncu_report",
    "nsight-python",
    "counter permission",
    "CUPTI",
    "PM sampling",
]
NCU_2025_OUTPUT = """\
NVIDIA (R) Nsight Compute Command Line Profiler
Copyright (c) 2018-2025 NVIDIA Corporation
Version 2025.3.1.0 (build 36398880) (public-release)
"""


def _nvml_loads() -> bool:
    try:
        gpu_stack.nvml_devices()
    except BackendUnavailableError:
        return False
    return True


NVML_LOADS = _nvml_loads()


@pytest.fixture
def ncu_2025_on_path(tmp_path, monkeypatch):
    """A real executable named ncu, first on PATH, that reports 2025.3.1.0."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(f"#!/bin/sh\nprintf '%s' '{NCU_2025_OUTPUT}'\n", encoding="utf-8")
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv(gpu_stack.NCU_ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return ncu


BACKEND_CHECKS = [
    f"{doctor.BACKEND_PREFIX}{backend_id}" for backend_id in backend_ids()
]
ALL_CHECKS = BACKEND_CHECKS + TOPICS


def by_name(checks):
    return {check.name: check for check in checks}


def in_given_order(names, order):
    positions = [order.index(name) for name in names]
    return positions == sorted(positions)


def test_run_checks_covers_every_backend_and_topic_what_works_first():
    checks = run_checks()
    names = [check.name for check in checks]

    assert sorted(names) == sorted(ALL_CHECKS)
    works = [check.status == "ok" for check in checks]
    assert works == sorted(works, reverse=True)  # every "ok" before the rest
    # Within each group: the backends in registry order, then the topics in order.
    assert in_given_order([c.name for c in checks if c.status == "ok"], ALL_CHECKS)
    assert in_given_order([c.name for c in checks if c.status != "ok"], ALL_CHECKS)
    statuses = set(get_args(doctor.CheckStatus))
    for check in checks:
        assert isinstance(check, Check)
        assert check.status in statuses
        assert check.detail
        if check.status != "ok":
            assert check.hint, check


def test_the_cpu_backend_works_and_comes_first():
    checks = run_checks()

    assert checks[0].name == f"{doctor.BACKEND_PREFIX}cpu"
    assert checks[0].status == "ok"
    assert checks[0].detail


def test_each_backend_says_whether_it_works_and_why_not():
    checks = by_name(run_checks())

    for backend_id, found in probe_all().items():
        check = checks[f"{doctor.BACKEND_PREFIX}{backend_id}"]
        assert check.status == ("ok" if found.ok else "missing")
        assert check.detail == found.reason
        if not found.ok:
            assert check.hint


@pytest.mark.skipif(NVML_LOADS, reason="NVML loads here")
def test_without_a_driver_gpu_and_nvml_say_so():
    checks = by_name(run_checks())

    for topic in ("GPU", "driver", "NVML"):
        assert checks[topic].status in {"missing", "error"}
        assert "driver" in checks[topic].hint
    assert "NVML" in checks["GPU"].detail


def test_run_checks_never_raises(monkeypatch):
    def explode(*_args, **_kwargs):
        msg = "probe exploded"
        raise RuntimeError(msg)

    for probe in (
        "nvml_devices",
        "find_ncu",
        "torch_cuda_status",
        "ncu_report_status",
        "nsight_python_status",
        "counter_permission",
        "cupti_status",
    ):
        monkeypatch.setattr(gpu_stack, probe, explode)

    checks = by_name(run_checks())

    assert sorted(checks) == sorted(ALL_CHECKS)
    for topic in ("ncu", "torch", "ncu_report", "counter permission", "CUPTI"):
        assert checks[topic].status == "error"
        assert "probe exploded" in checks[topic].detail
        assert checks[topic].hint
    assert checks["GPU"].status == "missing"


def test_ncu_check_reports_path_and_version(ncu_2025_on_path):
    checks = by_name(run_checks())

    assert checks["ncu"].status == "ok"
    assert str(ncu_2025_on_path) in checks["ncu"].detail
    assert "2025.3.1.0" in checks["ncu"].detail


@pytest.mark.usefixtures("ncu_2025_on_path")
def test_nsight_python_check_with_too_old_ncu(tmp_path, monkeypatch):
    if gpu_stack.package_version("nsight-python") is None:
        dist_info = tmp_path / "site" / "nsight_python-1.1.0.dist-info"
        dist_info.mkdir(parents=True)
        (dist_info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: nsight-python\nVersion: 1.1.0\n",
            encoding="utf-8",
        )
        monkeypatch.syspath_prepend(str(tmp_path / "site"))

    check = by_name(run_checks())["nsight-python"]

    assert check.status == "warn"
    assert "2026.2.1" in check.detail
    assert "isolated ncu path" in check.detail


def test_ncu_check_names_a_broken_override(tmp_path, monkeypatch):
    monkeypatch.setenv(gpu_stack.NCU_ENV_VAR, str(tmp_path / "nowhere"))

    check = by_name(run_checks())["ncu"]

    assert check.status == "error"
    assert gpu_stack.NCU_ENV_VAR in check.detail
    assert "nowhere" in check.detail


def test_ncu_check_missing_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.delenv(gpu_stack.NCU_ENV_VAR, raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(_ncu_tools, "CUDA_NCU_PATH", tmp_path / "ncu")
    monkeypatch.setattr(_ncu_tools, "NSIGHT_COMPUTE_ROOT", tmp_path / "opt")

    check = by_name(run_checks())["ncu"]

    assert check.status == "missing"
    assert "Nsight Compute" in check.hint
    assert gpu_stack.NCU_ENV_VAR in check.hint


def test_counter_check_refused_is_an_error_with_the_fix(tmp_path, monkeypatch):
    params = tmp_path / "params"
    params.write_text("EnableMSI: 1\nRmProfilingAdminOnly: 1\n", encoding="utf-8")
    status = tmp_path / "status"
    status.write_text("CapEff:\t0000000000000000\n", encoding="utf-8")
    monkeypatch.setattr(permission, "DRIVER_PARAMS_PATH", params)
    monkeypatch.setattr(permission, "PROC_STATUS_PATH", status)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)

    check = by_name(run_checks())["counter permission"]

    assert check.status == "error"
    assert "NVreg_RestrictProfilingToAdminUsers=0" in check.hint


# ------------------------------------------------------------------ formatting

SAMPLE = [
    Check("GPU", "ok", "1 GPU: [0] NVIDIA H200 (140.4 GiB)"),
    Check("ncu", "missing", "Nsight Compute CLI not found", "install Nsight Compute"),
    Check("counter permission", "error", "RmProfilingAdminOnly: 1", "run as root"),
    Check("torch", "warn", "torch 2.13.0+cpu is a CPU-only build"),
]


HEADINGS = {doctor_text.WORKS_HEADING, doctor_text.MISSING_HEADING}


def test_format_checks_one_line_per_check_plus_hints():
    lines = format_checks(SAMPLE).splitlines()

    assert len(lines) == len(SAMPLE) + 2 + 2  # two hints, two headings
    assert [line.split()[0] for line in lines if not line.startswith(" ")] == [
        doctor_text.WORKS_HEADING.split()[0],
        "ok",
        doctor_text.MISSING_HEADING.split()[0],
        "MISSING",
        "ERROR",
        "WARN",
    ]
    assert lines[0] == doctor_text.WORKS_HEADING
    assert lines[2] == doctor_text.MISSING_HEADING
    hints = [line for line in lines if line.startswith(" ")]
    assert [hint.strip() for hint in hints] == [
        "-> install Nsight Compute",
        "-> run as root",
    ]


def test_format_checks_aligns_columns():
    lines = format_checks(SAMPLE).splitlines()
    main = [line for line in lines if not line.startswith(" ") and line not in HEADINGS]

    detail_columns = {
        line.index(check.detail) for line, check in zip(main, SAMPLE, strict=True)
    }
    name_columns = {
        line.index(check.name) for line, check in zip(main, SAMPLE, strict=True)
    }
    hint_columns = {line.index("->") for line in lines if line.startswith(" ")}

    assert len(name_columns) == 1
    assert len(detail_columns) == 1
    assert hint_columns == detail_columns


def test_format_checks_of_real_checks():
    checks = run_checks()
    lines = format_checks(checks).splitlines()
    headings = [line for line in lines if line in HEADINGS]
    assert headings in (
        [
            doctor_text.WORKS_HEADING,
            doctor_text.MISSING_HEADING,
        ],  # a machine without a GPU
        [],  # every check ok (or none)
    )
    # Each backend once: a topic saying what its backend says is folded into it.
    shown = doctor_text.fold_backend_topics(checks)
    assert len(lines) == len(shown) + sum(1 for c in shown if c.hint) + len(headings)


def test_format_checks_without_headings_when_all_alike():
    lines = format_checks(SAMPLE[1:]).splitlines()
    assert not set(lines) & HEADINGS
    assert lines[0].startswith("MISSING")


def test_format_checks_empty():
    assert format_checks([]) == ""


def test_checks_to_json_round_trips():
    payload = checks_to_json(SAMPLE)

    assert json.loads(json.dumps(payload)) == payload
    assert payload[1] == {
        "name": "ncu",
        "status": "missing",
        "detail": "Nsight Compute CLI not found",
        "hint": "install Nsight Compute",
    }
    assert payload[0]["hint"] == ""


def test_the_text_lists_each_backend_once() -> None:
    """``%nsight doctor`` read ``backend pm`` and ``PM sampling`` with one message."""
    from nsight_lab.cli.doctor_text import fold_backend_topics

    hint = "pip install 'nsight-lab[pm]'"
    checks = [
        Check("backend pm", "missing", "cupti-python is not installed", hint),
        Check("backend ncu", "ok", "the isolated path works"),
        Check("ncu", "ok", "ncu 2025.3.1.0 at /usr/local/cuda/bin/ncu"),
        Check("backend cupti", "ok", "cupti-python 13.4.0"),
        Check("CUPTI", "missing", "libcupti not found", "install it"),
        Check("PM sampling", "missing", "cupti-python is not installed", hint),
    ]
    text = format_checks(checks)
    assert "PM sampling" not in text  # the same words as backend pm: once
    assert text.count(hint) == 1
    (ncu,) = [line for line in text.splitlines() if "backend ncu" in line]
    assert ncu.endswith(
        "the isolated path works; ncu: ncu 2025.3.1.0 at /usr/local/cuda/bin/ncu"
    )
    assert not any(line.split()[1:2] == ["ncu"] for line in text.splitlines())
    assert "CUPTI" in text  # it says otherwise than backend cupti: it stays
    names = [c.name for c in fold_backend_topics(checks)]
    assert names == ["backend pm", "backend ncu", "backend cupti", "CUPTI"]


def test_doctor_fits_the_terminal_and_gives_shared_advice_once() -> None:
    """Issue 30: lines ran to ~200 columns, four rows repeating one piece of advice."""
    advice = (
        "is the NVIDIA driver installed and loaded? `nvidia-smi` should list the GPU"
    )
    long = "no GPU visible: NVML could not be loaded (NVMLError_LibraryNotFound: " * 2
    checks = [
        Check("GPU", "missing", long, advice),
        Check("driver", "missing", "no NVIDIA driver answered through NVML", advice),
        Check("NVML", "missing", "NVML could not be loaded", advice),
    ]
    lines = format_checks(checks, width=80).splitlines()
    assert max(len(line) for line in lines) <= 80
    assert sum(advice in line for line in lines) == 0  # wrapped: never whole on one
    assert " ".join(" ".join(lines).split()).count("nvidia-smi") == 1
    assert [line.strip() for line in lines].count("-> as for GPU above") == 2
    detail_column = lines[0].index("no GPU")
    continued = [line for line in lines[1:] if not line.strip().startswith("->")]
    assert continued[0].index(continued[0].strip()) == detail_column
    unwrapped = format_checks(checks).splitlines()  # no width: one line each
    assert len(unwrapped) == 6
