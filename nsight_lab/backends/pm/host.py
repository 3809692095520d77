"""CUPTI's profiler host API for PM sampling: the version, the chip, the passes.

Asked by the probe and the doctor (no GPU work, no numpy): cupti-python's version,
the chip of a CUDA device, how many passes a set of metrics needs on it, and the
metric names it knows.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from typing import TYPE_CHECKING

from nsight_lab.backends.pm import errors

if TYPE_CHECKING:
    from collections.abc import Sequence


def cupti_version() -> str | None:
    """The installed cupti-python's version, or None."""
    try:
        return importlib.metadata.version("cupti-python")
    except importlib.metadata.PackageNotFoundError:
        return None


def chip_name(device_index: int) -> str:
    """CUPTI's name of the chip of CUDA device ``device_index`` (``"GH100"``).

    Raises:
        BackendUnavailableError: CUPTI cannot be loaded or does not know the device.
    """
    try:
        from cupti import cupti  # noqa: PLC0415  (optional: cupti-python)
    except Exception as exc:
        raise errors.explain(exc, started=False) from exc

    def ask() -> str:
        params = cupti.DeviceGetChipNameParams()
        params.struct_size = cupti.DEVICE_GET_CHIP_NAME_PARAMS_STRUCT_SIZE
        params.device_index = device_index
        cupti.device_get_chip_name(params.ptr)
        return str(params.p_chip_name)

    with contextlib.suppress(Exception):  # asked again with the profiler initialized
        return ask()
    # cupti.pm_sampling.Collector.enable initializes the profiler before it asks;
    # do the same, and undo it (the profiler is initialized again when enabled).
    try:
        init = cupti.ProfilerInitializeParams()
        init.struct_size = cupti.PROFILER_INITIALIZE_PARAMS_STRUCT_SIZE
        cupti.profiler_initialize(init.ptr)
        try:
            return ask()
        finally:
            done = cupti.ProfilerDeInitializeParams()
            done.struct_size = cupti.PROFILER_DEINITIALIZE_PARAMS_STRUCT_SIZE
            cupti.profiler_deinitialize(done.ptr)
    except Exception as exc:
        raise errors.explain(exc, started=False) from exc


class CuptiMetricsHost:
    """The profiler host API of one chip: config images and their passes (no GPU)."""

    def __init__(self, chip: str) -> None:
        """Remember the chip; CUPTI is loaded when first asked."""
        self.chip = chip
        self._names: list[str] | None = None

    def passes(self, metrics: Sequence[str]) -> int:
        """The passes PM sampling needs for ``metrics``.

        Raises:
            ValueError: A metric is unknown on this chip for PM sampling.
        """
        from cupti import profiler_host  # noqa: PLC0415  (optional: cupti-python)

        host = profiler_host.ProfilerHost(
            self.chip, profiler_host.ProfilerType.PM_SAMPLING
        )
        host.initialize()
        try:
            image = host.create_config_image(metrics=list(metrics))
            return int(profiler_host.get_num_of_passes(image))
        except ValueError:
            raise
        except Exception as exc:
            # GH100 answered ERROR_INVALID_PARAMETER (not cupti-python's ValueError)
            # for a metric PM sampling does not know: a refusal like any other.
            if errors.status_name(exc) in errors.REFUSED_STATUSES:
                msg = f"PM sampling does not take {', '.join(metrics)} ({exc})"
                raise ValueError(msg) from exc
            raise
        finally:
            host.deinitialize()

    def names(self) -> list[str]:
        """Every metric PM sampling knows on this chip: base metrics and sub-metrics."""
        if self._names is None:
            from cupti import profiler_host  # noqa: PLC0415  (optional: cupti-python)

            host = profiler_host.ProfilerHost(
                self.chip, profiler_host.ProfilerType.PM_SAMPLING
            )
            host.initialize()
            found: list[str] = []
            try:
                for kind in profiler_host.MetricType:
                    if kind.name.startswith("_"):
                        continue
                    for base in host.get_base_metrics(kind):
                        found.append(base)
                        with contextlib.suppress(ValueError):
                            found += host.get_sub_metrics(base, kind)
            finally:
                host.deinitialize()
            self._names = sorted(set(found))
        return self._names
