"""Empirical device peaks (``%nsight peaks``), cached per device in the run store.

Measured once (:mod:`nsight_lab.roofline.measure`: copy bandwidth and dense matmul
rates with PyTorch), kept in the store's cache as JSON, and looked up for a session's
device beside the datasheet table (:func:`known_peaks`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from nsight_lab.roofline.devices import DTYPE_CLASSES, Peaks, peaks_for
from nsight_lab.roofline.measure import (
    DEFAULT_DTYPES,
    MEASURED_SOURCE,
    device_name,
    measure_peaks,
)

if TYPE_CHECKING:
    from collections.abc import Callable


__all__ = [
    "DEFAULT_DTYPES",
    "MEASURED_SOURCE",
    "Peaks",
    "PeaksCache",
    "cached_peaks",
    "device_name",
    "known_peaks",
    "measure_peaks",
    "measured_peaks",
    "peaks_from_json",
    "peaks_to_json",
]

logger = logging.getLogger(__name__)

PEAKS_JSON_VERSION = 1
"""The version of :func:`peaks_to_json`'s shape."""

CACHE_PREFIX = "peaks:"
"""Store cache key prefix of measured peaks, followed by the device name."""


class PeaksCache(Protocol):
    """What :func:`cached_peaks` needs of a store (``RunStore`` has it)."""

    def cache_get(self, key: str) -> Any:  # noqa: ANN401  (any JSON value)
        """Return the JSON value under ``key`` or None."""

    def cache_put(self, key: str, value: Any) -> None:  # noqa: ANN401
        """Store a JSON value under ``key``."""


def peaks_to_json(peaks: Peaks) -> dict[str, Any]:
    """Return a JSON-able dict of ``peaks``.

    Raises:
        Nothing.
    """
    return {
        "version": PEAKS_JSON_VERSION,
        "device": peaks.device,
        "flops_per_s": dict(peaks.flops_per_s),
        "dram_bytes_per_s": peaks.dram_bytes_per_s,
        "source": peaks.source,
        "notes": list(peaks.notes),
    }


def peaks_from_json(data: Any) -> Peaks:  # noqa: ANN401  (any decoded JSON)
    """Rebuild :class:`~nsight_lab.roofline.placement.Peaks` from :func:`peaks_to_json`.

    Raises:
        ValueError: ``data`` does not have that shape.
    """
    try:
        flops = {str(k): float(v) for k, v in data["flops_per_s"].items()}
        peaks = Peaks(
            device=str(data["device"]),
            flops_per_s=flops,
            dram_bytes_per_s=float(data["dram_bytes_per_s"]),
            source=str(data["source"]),
            notes=tuple(str(n) for n in data.get("notes") or ()),
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        msg = f"not a peaks record: {exc!r}; expected the output of peaks_to_json"
        raise ValueError(msg) from exc
    if set(flops) - set(DTYPE_CLASSES) or not peaks.dram_bytes_per_s > 0:
        msg = f"not a peaks record: {data!r}; expected the output of peaks_to_json"
        raise ValueError(msg)
    return peaks


def cached_peaks(
    store: PeaksCache,
    device_name: str,
    measure: Callable[[str], Peaks] = measure_peaks,
    *,
    device: str = "cuda",
    refresh: bool = False,
) -> Peaks:
    """Return the measured peaks of ``device_name``, measuring only when not cached.

    Args:
        store: The run store (its ``cache_get``/``cache_put``), key
            ``"peaks:<device_name>"``.
        device_name: The device's name (see :func:`device_name`).
        measure: Called as ``measure(device)`` on a cache miss.
        device: The torch device to measure on a miss.
        refresh: Measure again even when cached.

    Returns:
        The cached or freshly measured peaks.

    Raises:
        StoreError: The store cannot be read or written.
        MeasurementError: Measuring failed.
    """
    key = f"{CACHE_PREFIX}{device_name}"
    if not refresh:
        cached = store.cache_get(key)
        if cached is not None:
            try:
                return peaks_from_json(cached)
            except ValueError as exc:
                logger.warning("[nsight-lab] ignoring cached %s: %s", key, exc)
    peaks = measure(device)
    store.cache_put(key, peaks_to_json(peaks))
    return peaks


def known_peaks(store: PeaksCache, device: str | None, *, cpu: bool) -> Peaks | None:
    """The roofs to place a session's regions under, without measuring anything.

    A GPU uses the datasheet table (``roofline.PEAKS_TABLE``), else peaks measured
    earlier by ``%nsight peaks``; a CPU only measured peaks.
    """
    if not device:
        return None
    key = f"CPU {device}" if cpu else device
    if not cpu:
        listed = peaks_for(device)
        if listed is not None:
            return listed
    cached = store.cache_get(f"{CACHE_PREFIX}{key}")
    if cached is None:
        return None
    try:
        return peaks_from_json(cached)
    except ValueError:
        return None


def measured_peaks(store: PeaksCache, device: str | None, *, cpu: bool) -> Peaks | None:
    """The peaks ``%nsight peaks`` measured on ``device`` and kept, if any.

    The attainable figures (a copy's bandwidth, a matmul's rate) that findings judge
    a region against before the datasheet's (:func:`known_peaks` prefers the
    datasheet for a listed GPU, so the roofline keeps its published roofs).
    """
    if not device:
        return None
    cached = store.cache_get(f"{CACHE_PREFIX}{'CPU ' if cpu else ''}{device}")
    if cached is None:
        return None
    try:
        return peaks_from_json(cached)
    except ValueError:
        return None
