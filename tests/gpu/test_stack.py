"""Tests of nsight_lab.gpu.stack: real files, real subprocesses, real imports.

The machine these run on usually has no GPU, no driver and no ncu; stand-ins are real
executables and real files in a temporary directory, so the code paths run for real.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from nsight_lab.errors import BackendUnavailableError
from nsight_lab.gpu import ncu as _ncu_tools
from nsight_lab.gpu import nvml as _nvml
from nsight_lab.gpu import permission
from nsight_lab.gpu import stack as gpu_stack

NCU_2025_OUTPUT = """\
NVIDIA (R) Nsight Compute Command Line Profiler
Copyright (c) 2018-2025 NVIDIA Corporation
Version 2025.3.1.0 (build 36398880) (public-release)
"""
NCU_2026_OUTPUT = """\
NVIDIA (R) Nsight Compute Command Line Profiler
Copyright (c) 2018-2026 NVIDIA Corporation
Version 2026.2.1.0 (build 37012345) (public-release)
"""
# The driver's params file has many entries; this is a slice of a real one.
DRIVER_PARAMS = """\
ResmanDebugLevel: 4294967295
RmLogonRC: 1
ModifyDeviceFiles: 1
DeviceFileUID: 0
EnableMSI: 1
RmProfilingAdminOnly: {value}
PreserveVideoMemoryAllocations: 0
"""
PROC_STATUS = """\
Name:\tpython3
Uid:\t1000\t1000\t1000\t1000
CapInh:\t0000000000000000
CapPrm:\t{cap}
CapEff:\t{cap}
CapBnd:\t000001ffffffffff
"""
CAP_NONE = "0000000000000000"
CAP_ALL = "000001ffffffffff"  # root outside a container
CAP_DOCKER_DEFAULT = "00000000a80425fb"  # docker's default set: no CAP_SYS_ADMIN


def _nvml_loads() -> bool:
    try:
        gpu_stack.nvml_devices()
    except BackendUnavailableError:
        return False
    return True


NVML_LOADS = _nvml_loads()


def write_executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def stand_in_ncu(directory: Path, output: str = NCU_2025_OUTPUT) -> Path:
    """An executable named ncu that answers --version like the real one."""
    return write_executable(
        directory / "ncu",
        'if [ "$1" != "--version" ]; then echo "unexpected: $*" >&2; exit 2; fi\n'
        f"printf '%s' '{output}'\n",  # a builtin: PATH may hold only this ncu
    )


@pytest.fixture
def no_ncu(monkeypatch, tmp_path):
    """A PATH without ncu and fallback locations that do not exist."""
    monkeypatch.delenv(gpu_stack.NCU_ENV_VAR, raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(_ncu_tools, "CUDA_NCU_PATH", tmp_path / "no-cuda" / "ncu")
    monkeypatch.setattr(_ncu_tools, "NSIGHT_COMPUTE_ROOT", tmp_path / "no-opt")
    return tmp_path


def fake_distribution(site: Path, name: str, version: str) -> None:
    """Install package metadata only (what importlib.metadata reads)."""
    dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )


# ----------------------------------------------------------------- ncu version


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (NCU_2025_OUTPUT, (2025, 3, 1, 0)),
        (NCU_2026_OUTPUT, (2026, 2, 1, 0)),
        ("Version 2024.1.1.0 (build 33998838) (public-release)\r\n", (2024, 1, 1, 0)),
        ("ncu: command not found\n", None),
        ("Version unknown\n", None),
        ("", None),
    ],
)
def test_parse_ncu_version(text, expected):
    assert gpu_stack.parse_ncu_version(text) == expected


def test_format_version():
    assert gpu_stack.format_version((2025, 3, 1, 0)) == "2025.3.1.0"


@pytest.mark.parametrize(
    ("version", "accepted"),
    [
        ((2025, 3, 1, 0), False),
        ((2026, 2, 0, 9), False),
        ((2026, 2, 1), True),
        ((2026, 2, 1, 0), True),
        ((2027, 1, 0, 0), True),
        (None, False),
    ],
)
def test_nsight_python_accepts(version, accepted):
    assert gpu_stack.nsight_python_accepts(version) is accepted


# -------------------------------------------------------------------- find_ncu


def test_find_ncu_on_path_and_its_version(no_ncu, monkeypatch):
    bin_dir = no_ncu / "bin"
    ncu = stand_in_ncu(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    found = gpu_stack.find_ncu()

    assert found == ncu
    assert gpu_stack.ncu_version(found) == (2025, 3, 1, 0)


@pytest.mark.usefixtures("no_ncu")
def test_find_ncu_none_when_nowhere():
    assert gpu_stack.find_ncu() is None


def test_env_override_wins_over_path(no_ncu, monkeypatch):
    on_path = stand_in_ncu(no_ncu / "bin")
    chosen = stand_in_ncu(no_ncu / "chosen", NCU_2026_OUTPUT)
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv(gpu_stack.NCU_ENV_VAR, str(chosen))

    assert gpu_stack.find_ncu() == chosen
    assert gpu_stack.ncu_version(chosen) == (2026, 2, 1, 0)


def test_env_override_may_name_the_directory(no_ncu, monkeypatch):
    chosen = stand_in_ncu(no_ncu / "chosen")
    monkeypatch.setenv(gpu_stack.NCU_ENV_VAR, str(chosen.parent))
    assert gpu_stack.find_ncu() == chosen


def test_broken_env_override_is_not_replaced_by_path(no_ncu, monkeypatch, caplog):
    on_path = stand_in_ncu(no_ncu / "bin")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv(gpu_stack.NCU_ENV_VAR, str(no_ncu / "nowhere" / "ncu"))

    assert gpu_stack.find_ncu() is None
    assert gpu_stack.NCU_ENV_VAR in caplog.text


def test_find_ncu_falls_back_to_cuda_home(no_ncu, monkeypatch):
    ncu = stand_in_ncu(no_ncu / "cuda" / "bin")
    monkeypatch.setenv("CUDA_HOME", str(no_ncu / "cuda"))
    assert gpu_stack.find_ncu() == ncu


def test_find_ncu_falls_back_to_usr_local_cuda(no_ncu, monkeypatch):
    ncu = stand_in_ncu(no_ncu / "usr-local-cuda" / "bin")
    monkeypatch.setattr(_ncu_tools, "CUDA_NCU_PATH", ncu)
    assert gpu_stack.find_ncu() == ncu


def test_find_ncu_takes_newest_opt_install(no_ncu, monkeypatch):
    root = no_ncu / "opt-nsight-compute"
    for version in ("2025.3.1", "2025.10.0", "2024.1.1"):
        stand_in_ncu(root / version)
    (root / "2026.1.0").mkdir()  # an install without ncu is skipped
    monkeypatch.setattr(_ncu_tools, "NSIGHT_COMPUTE_ROOT", root)

    assert gpu_stack.find_ncu() == root / "2025.10.0" / "ncu"


def test_find_ncu_skips_non_executable(no_ncu, monkeypatch):
    not_executable = no_ncu / "usr-local-cuda" / "bin" / "ncu"
    not_executable.parent.mkdir(parents=True)
    not_executable.write_text("not a program", encoding="utf-8")
    monkeypatch.setattr(_ncu_tools, "CUDA_NCU_PATH", not_executable)
    assert gpu_stack.find_ncu() is None


# ------------------------------------------------------------------ ncu_version


def test_ncu_version_none_when_ncu_fails(tmp_path):
    failing = write_executable(tmp_path / "ncu", "echo 'ncu: broken' >&2\nexit 1\n")
    assert gpu_stack.ncu_version(failing) is None


def test_ncu_version_none_when_output_has_no_version(tmp_path):
    chatty = write_executable(tmp_path / "ncu", "echo 'hello'\n")
    assert gpu_stack.ncu_version(chatty) is None


def test_ncu_version_none_when_missing(tmp_path):
    assert gpu_stack.ncu_version(tmp_path / "ncu") is None


def test_ncu_version_none_on_timeout(tmp_path):
    slow = write_executable(tmp_path / "ncu", "exec sleep 10\n")
    assert gpu_stack.ncu_version(slow, timeout_s=0.3) is None


# --------------------------------------------------------------- nsight-python


@pytest.fixture
def nsight_python_installed(tmp_path, monkeypatch):
    if gpu_stack.package_version("nsight-python") is not None:
        return
    site = tmp_path / "site"
    fake_distribution(site, "nsight-python", "1.1.0")
    monkeypatch.syspath_prepend(str(site))


@pytest.mark.usefixtures("nsight_python_installed")
def test_nsight_python_status_with_too_old_ncu():
    found = gpu_stack.nsight_python_status((2025, 3, 1, 0))

    assert found.ok is False
    assert "2026.2.1" in found.detail
    assert "2025.3.1.0" in found.detail
    assert "isolated ncu path" in found.detail
    assert "2026.2.1" in found.hint


@pytest.mark.usefixtures("nsight_python_installed")
def test_nsight_python_status_with_new_ncu():
    found = gpu_stack.nsight_python_status((2026, 2, 1, 0))
    assert found.ok is True
    assert "2026.2.1.0" in found.detail


@pytest.mark.usefixtures("nsight_python_installed")
def test_nsight_python_status_without_ncu():
    found = gpu_stack.nsight_python_status(None)
    assert found.ok is False
    assert "no ncu" in found.detail
    assert found.hint == gpu_stack.NCU_INSTALL_HINT


@pytest.mark.skipif(
    gpu_stack.package_version("nsight-python") is not None,
    reason="nsight-python is installed here",
)
def test_nsight_python_status_not_installed():
    found = gpu_stack.nsight_python_status((2026, 2, 1, 0))
    assert found.ok is False
    assert "not installed" in found.detail
    assert "pip install nsight-python" in found.hint


@pytest.mark.usefixtures("nsight_python_installed")
def test_nsight_python_status_does_not_import_nsight():
    imported_before = "nsight" in sys.modules
    gpu_stack.nsight_python_status((2025, 3, 1, 0))
    assert ("nsight" in sys.modules) is imported_before


# ---------------------------------------------------------- counter permission


def test_counters_open_to_all(tmp_path):
    params = tmp_path / "params"
    params.write_text(DRIVER_PARAMS.format(value=0), encoding="utf-8")

    found = gpu_stack.counter_permission(params)

    assert found.ok is True
    assert found.hint == ""


@pytest.mark.parametrize("cap", [CAP_NONE, CAP_DOCKER_DEFAULT])
def test_counters_admin_only_as_non_admin(tmp_path, monkeypatch, cap):
    params = tmp_path / "params"
    params.write_text(DRIVER_PARAMS.format(value=1), encoding="utf-8")
    status = tmp_path / "status"
    status.write_text(PROC_STATUS.format(cap=cap), encoding="utf-8")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)

    found = gpu_stack.counter_permission(params, status_path=status)

    assert found.ok is False
    assert "RmProfilingAdminOnly: 1" in found.detail
    assert "run as root" in found.hint
    assert "NVreg_RestrictProfilingToAdminUsers=0" in found.hint
    assert "/etc/modprobe.d" in found.hint
    assert "--cap-add SYS_ADMIN" in found.hint
    assert "ERR_NVGPUCTRPERM" in found.hint


def test_counters_admin_only_as_admin(tmp_path):
    params = tmp_path / "params"
    params.write_text(DRIVER_PARAMS.format(value=1), encoding="utf-8")
    status = tmp_path / "status"
    status.write_text(PROC_STATUS.format(cap=CAP_ALL), encoding="utf-8")

    assert gpu_stack.counter_permission(params, status_path=status).ok is True


@pytest.mark.parametrize(("euid", "allowed"), [(0, True), (1000, False)])
def test_counters_admin_only_without_capabilities_uses_euid(
    tmp_path, monkeypatch, euid, allowed
):
    params = tmp_path / "params"
    params.write_text(DRIVER_PARAMS.format(value=1), encoding="utf-8")
    monkeypatch.setattr(os, "geteuid", lambda: euid)

    found = gpu_stack.counter_permission(params, status_path=tmp_path / "no-status")

    assert found.ok is allowed


def test_counters_unknown_without_params_file(tmp_path):
    found = gpu_stack.counter_permission(tmp_path / "no-such-params")
    assert found.ok is None
    assert "no-such-params" in found.detail
    assert "driver" in found.hint


def test_counters_unknown_without_entry(tmp_path):
    params = tmp_path / "params"
    params.write_text("EnableMSI: 1\n", encoding="utf-8")
    assert gpu_stack.counter_permission(params).ok is None


def test_counter_permission_defaults_read_module_paths(tmp_path, monkeypatch):
    params = tmp_path / "params"
    params.write_text(DRIVER_PARAMS.format(value=0), encoding="utf-8")
    monkeypatch.setattr(permission, "DRIVER_PARAMS_PATH", params)
    assert gpu_stack.counter_permission().ok is True


# ------------------------------------------------------------------------ NVML


@pytest.mark.skipif(NVML_LOADS, reason="NVML loads here")
def test_nvml_devices_without_driver_says_so():
    with pytest.raises(BackendUnavailableError, match="NVIDIA driver") as info:
        gpu_stack.nvml_devices()
    assert info.value.__cause__ is not None


def test_nvml_devices_without_nvidia_ml_py(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` fail
    with pytest.raises(BackendUnavailableError, match="pip install nvidia-ml-py"):
        gpu_stack.nvml_devices()


@pytest.mark.gpu
@pytest.mark.skipif(not NVML_LOADS, reason="needs an NVIDIA GPU and driver (NVML)")
def test_nvml_devices_on_a_gpu():
    devices = gpu_stack.nvml_devices()
    assert devices
    first = devices[0]
    assert first.index == 0
    assert first.name
    assert first.uuid.startswith(("GPU-", "MIG-"))
    assert first.memory_total_bytes > 2**30
    assert first.driver_version.count(".") >= 1
    major, _, minor = first.cuda_driver_version.partition(".")
    assert int(major) >= 11
    assert minor.isdigit()


@pytest.mark.parametrize(("encoded", "text"), [(13000, "13.0"), (12040, "12.4")])
def test_cuda_driver_version_text(encoded, text):
    assert _nvml._cuda_version_text(encoded) == text  # noqa: SLF001


# ------------------------------------------------------- CUPTI, ncu_report, torch


def test_cupti_status_never_raises_and_explains():
    found = gpu_stack.cupti_status()
    assert "cupti-python" in found.detail
    assert "libcupti" in found.detail
    if not found.ok:
        assert "pip install" in found.hint


def test_find_libcupti_in_cuda_extras(tmp_path, monkeypatch):
    if any(
        gpu_stack.package_version(name) is not None
        for name in ("nvidia-cuda-cupti", "nvidia-cuda-cupti-cu12")
    ):
        pytest.skip("a CUPTI wheel is installed and is looked at first")
    lib_dir = tmp_path / "cuda" / "extras" / "CUPTI" / "lib64"
    lib_dir.mkdir(parents=True)
    (lib_dir / "libcupti.so.13").write_bytes(b"")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))

    assert gpu_stack.find_libcupti() == str(lib_dir / "libcupti.so.13")


@pytest.mark.skipif(
    gpu_stack.package_version("ncu-report") is not None,
    reason="ncu-report is installed here",
)
def test_ncu_report_status_missing_says_how_to_install():
    found = gpu_stack.ncu_report_status()
    assert found.ok is False
    assert "ncu_report" in found.detail
    assert "pip install nsight-lab[ncu]" in found.hint
    assert "pip install ncu-report" in found.hint


def test_ncu_report_status_with_an_importable_module(tmp_path, monkeypatch):
    # ncu_report as Nsight Compute ships it (extras/python/ncu_report.py): no metadata.
    (tmp_path / "ncu_report.py").write_text("VERSION = 'stand-in'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)
    try:
        found = gpu_stack.ncu_report_status()
    finally:
        sys.modules.pop("ncu_report", None)
    assert found.ok is True
    assert found.detail.startswith("ncu_report")


def test_torch_cuda_status_matches_torch():
    found = gpu_stack.torch_cuda_status()
    torch = pytest.importorskip("torch")
    assert torch.__version__ in found.detail
    if torch.version.cuda is None:
        assert found.ok is False
        assert "CPU-only" in found.detail
        assert "CUDA build" in found.hint
    else:
        assert found.ok is torch.cuda.is_available()


def test_stack_status_message_joins_detail_and_hint():
    assert gpu_stack.StackStatus(ok=False, detail="a", hint="b").message == "a; b"
    assert gpu_stack.StackStatus(ok=True, detail="a").message == "a"


# ---------------------------------------------------------------- import hygiene


def test_import_loads_no_gpu_package():
    code = (
        "import sys, nsight_lab.gpu.stack, nsight_lab.cli.doctor\n"
        "heavy = ('pynvml', 'torch', 'cupti', 'ncu_report', 'nsight')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    completed = subprocess.run(  # noqa: S603  (our own interpreter, fixed code)
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert completed.stdout.strip() == ""
