"""nsight-python 1.1.0's public names and signatures, served by nsight-lab.

The lists are nsight-python 1.1.0's (its ``nsight/__init__.py`` ``__all__``, the
parameters of ``analyze.kernel`` and ``analyze.plot`` in order), so code written for it
finds every name and keyword where it expects them.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

import nsight_lab
import nsight_lab as nsight

NSIGHT_ALL = [
    "CollectionScope", "InfoCollector", "Tool", "VerbosityLevel", "activate", "analyze",
    "annotate", "deactivate", "experimental", "get_active_tool",
]  # fmt: skip
KERNEL_PARAMETERS = [
    "_func", "configs", "runs", "derive_metric", "normalize_against", "verbosity",
    "metrics", "ignore_kernel_list", "clock_control", "cache_control", "replay_mode",
    "thermal_mode", "thermal_wait", "thermal_cont", "thermal_timeout", "thermal_device",
    "combine_kernel_metrics", "output_prefix", "output_csv", "info_collectors",
]  # fmt: skip
PLOT_PARAMETERS = [
    "filename", "metric", "title", "ylabel", "annotate_points", "show_aggregate",
    "plot_type", "plot_width", "plot_height", "row_panels", "col_panels", "x_keys",
    "print_data", "variant_fields", "variant_annotations", "plot_callback",
]  # fmt: skip


def test_every_public_name_is_there() -> None:
    for name in NSIGHT_ALL:
        assert getattr(nsight, name) is not None, name
    for name in ("kernel", "plot", "ignore_failures"):
        assert callable(getattr(nsight.analyze, name))
    assert callable(nsight.experimental.collect)
    for name in ("ProfilerException", "NCUNotAvailableError", "ThermalControlError"):
        assert issubclass(getattr(nsight.exceptions, name), Exception)
    # The rest of nsight.exceptions: its messages in its words, its error context.
    invalid = nsight.exceptions.MetricErrorType.INVALID
    assert nsight.exceptions.get_metrics_error_message(["a.sum"], invalid) == (
        "Invalid value ['a.sum'] for 'metrics' parameter for nsight.analyze.kernel()."
        "\nPlease refer ncu --query-metrics for list of supported metrics."
    )
    assert "pip install nsight-python[cupti]" in nsight.exceptions.CUPTI_UNAVAILABLE_MSG
    assert "cuda-core is required" in nsight.exceptions.CUDA_CORE_UNAVAILABLE_MSG
    context = nsight.exceptions.NCUErrorContext(["e"], "ncu.log", ["a.sum"])
    assert (context.errors, context.log_file_path) == (["e"], "ncu.log")
    assert [s.value for s in nsight.CollectionScope] == [
        "once",
        "config",
        "run",
        "annotation",
    ]
    assert [int(v) for v in nsight.VerbosityLevel] == [0, 3, 4]
    with pytest.raises(AttributeError, match="no attribute 'analyse'"):
        nsight_lab.analyse  # noqa: B018  (a typo gets Python's error)


def test_signatures_keep_nsight_pythons_parameters_in_order() -> None:
    kernel = list(inspect.signature(nsight.analyze.kernel).parameters)
    assert kernel[: len(KERNEL_PARAMETERS)] == KERNEL_PARAMETERS
    assert kernel[len(KERNEL_PARAMETERS) :] == ["backend", "warmup"]  # nsight-lab's
    plot = list(inspect.signature(nsight.analyze.plot).parameters)
    assert plot == PLOT_PARAMETERS
    annotate = list(inspect.signature(nsight.annotate).parameters)
    assert annotate == ["name", "ignore_failures"]
    defaults = inspect.signature(nsight.analyze.kernel).parameters
    assert defaults["runs"].default == 1
    assert defaults["cache_control"].default == "all"
    assert defaults["thermal_mode"].default == "auto"


def test_importing_nsight_lab_loads_no_pandas() -> None:
    """The Jupyter server imports nsight_lab: the API loads only when it is used."""
    code = (
        "import sys, nsight_lab; "
        "print('pandas' in sys.modules, 'nsight_lab.api' in sys.modules); "
        "nsight_lab.analyze; print('nsight_lab.api' in sys.modules)"
    )
    out = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    # Issue 32: the API itself no longer loads pandas (only a DataFrame asked for does).
    assert out == ["False", "False", "True"]


def test_the_stand_in_module_serves_the_api_on_first_use() -> None:
    code = (
        "import sys; from nsight_lab.nsight_shim import install_nsight_shim; "
        "install_nsight_shim(replace=True); import nsight; "
        "print('nsight_lab.api' in sys.modules, nsight.analyze.kernel.__module__, "
        "nsight.annotate.__module__, hasattr(nsight, 'nope'))"
    )
    out = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "nsight_lab.api.kernel", "nsight_lab.regions", "False"]


def test_kernels_keywords_are_declared_once() -> None:
    """``kernel``'s signature is derived from KernelSettings, its one declaration."""
    from dataclasses import fields
    from pathlib import Path

    from nsight_lab.api.settings import KernelSettings

    kernel_module = importlib.import_module("nsight_lab.api.kernel")

    declared = [f for f in fields(KernelSettings) if f.init]
    parameters = inspect.signature(nsight.analyze.kernel).parameters
    assert list(parameters)[1:] == [f.name for f in declared]
    for f in declared:
        assert parameters[f.name].default == f.default, f.name
        assert parameters[f.name].kind is inspect.Parameter.KEYWORD_ONLY
    # The decorator's module names no keyword of its own: no second list to keep.
    source = Path(kernel_module.__file__).read_text(encoding="utf-8")
    assert "thermal_timeout" not in source
    assert "replay_mode:" not in source
    assert "replay_mode=" not in source
    with pytest.raises(TypeError, match="unexpected keyword argument 'run'"):
        nsight.analyze.kernel(run=3)
    with pytest.raises(ValueError, match="Invalid replay_mode 'x'"):
        nsight.analyze.kernel(replay_mode="x")
