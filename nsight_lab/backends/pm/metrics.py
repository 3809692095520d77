"""Which metrics the ``pm`` backend samples: defaults, kinds, units, and the check.

**Defaults** (``--backend pm`` without ``--metrics``, :data:`DEFAULT_METRICS`): DRAM
bytes read and written, L2 bytes, tensor-pipe activity, SM cycles active and PCIe
bytes -- every one accepted by PM sampling on GH100.

**Kinds.** A region's value is not computed the same way for every metric
(:func:`kind_of`): *counts* (``.sum``, ``.avg``, ``.max`` of a counter: bytes,
cycles, instructions) add up over time, so a region gets its pro-rata share of each
sample; *rates* (``.per_second``, ``.pct_of_peak_sustained_elapsed``) are a count
divided by the sample's time, so they are turned back into counts, shared, and
divided by the region's kernel time; *ratios* (``.ratio``,
``.pct_of_peak_sustained_active``, ``.per_cycle_active``) cannot be split and are
averaged over the samples that overlap the region, weighted by the overlap.

**The check** (:class:`MetricCheck`): PM sampling takes the metrics of one pass of the
chip's counters. Each metric is tried alone on the profiler host API (a config image
for the chip; no GPU work) and then the set together (the number of passes of its
config image). Verdicts are kept per device in the run store (key
``pm-metrics:<device>``, as ``%nsight peaks`` keeps peaks), so a device is asked once
per metric. A refusal is one line that says which metric, or which groups would fit
in one pass each.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.roofline.counters import DRAM_READ, DRAM_WRITE

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

logger = logging.getLogger(__name__)

DEFAULT_METRICS: tuple[str, ...] = (
    DRAM_READ,
    DRAM_WRITE,
    "lts__t_bytes.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg",
    "pcie__read_bytes.sum",
    "pcie__write_bytes.sum",
)
"""Sampled when ``--backend pm`` is given without ``--metrics``."""
DEFAULT_OPTION_METRICS: tuple[str, ...] = (TIME_METRIC, *DEFAULT_METRICS)
"""The same as the ``metrics`` option holds them (the region time first)."""

CACHE_PREFIX = "pm-metrics:"
"""Store cache key prefix, followed by the device name."""
CACHE_VERSION = 1

MetricKind = Literal["count", "rate", "ratio"]

_RATE_SUFFIXES = (".per_second", ".pct_of_peak_sustained_elapsed", ".per_cycle_elapsed")
_RATIO_MARKERS = (".ratio", ".pct", ".per_cycle_active", ".per_cycle_in_region")


def kind_of(metric: str) -> MetricKind:
    """How ``metric`` combines over time (see the module docstring)."""
    if metric.endswith(_RATE_SUFFIXES):
        return "rate"
    if any(marker in metric for marker in _RATIO_MARKERS):
        return "ratio"
    return "count"


def counts_writeback(metric: str) -> bool:
    """Whether a region's write-back sweep adds to ``metric``: DRAM writes only.

    The sweep reads the L2's size twice over, so every other counter (reads, L2
    traffic, cycles) would count the sweep, not the region.
    """
    return metric.startswith(
        ("dram__bytes_write", "dram__sectors_write")
    ) and not metric.endswith(WRITEBACK_SUFFIX)


WRITEBACK_SUFFIX = ".writeback"


def writeback_metric(metric: str) -> str:
    """The name of a DRAM write metric's write-back part.

    ``dram__bytes_write.sum`` -> ``dram__bytes_write.sum.writeback``: the region's
    dirty lines written back after its last kernel, which Nsight Compute's
    per-kernel count leaves out (x * 2 over 256 MiB: ncu 241 MB written, the
    write-back 27 MB more, on the H200).
    """
    return metric + WRITEBACK_SUFFIX


def is_percent(metric: str) -> bool:
    """Whether the metric's value is a percentage."""
    return ".pct" in metric


def timeline_unit(metric: str) -> str:
    """The unit of ``metric`` in the "Counters over time" chart.

    Counts become rates: bytes per ns are GB/s, other counts per second; rates and
    ratios keep their own unit (``%`` for percentages).
    """
    kind = kind_of(metric)
    if is_percent(metric):
        return "%"
    if kind == "count":
        return "GB/s" if "bytes" in metric else "/s"
    if metric.endswith(".per_second"):
        return "/s"
    return ""


def timeline_scale(metric: str) -> float:
    """Factor from a count per ns to :func:`timeline_unit` (1 for rates and ratios)."""
    if kind_of(metric) == "count" and "bytes" not in metric:
        return 1e9  # per ns -> per second
    return 1.0  # bytes per ns are GB/s; rates and ratios are kept as they are


class MetricsHost(Protocol):
    """The profiler host API for one chip (:class:`~.host.CuptiMetricsHost`)."""

    chip: str

    def passes(self, metrics: Sequence[str]) -> int:
        """The passes the config image of ``metrics`` needs.

        Raises:
            ValueError: A metric is not known on this chip for PM sampling.
        """

    def names(self) -> list[str]:
        """Every metric name PM sampling knows on this chip (for close matches)."""


class MetricsCache(Protocol):
    """What the check needs of a store (``RunStore`` has it)."""

    def cache_get(self, key: str) -> Any:  # noqa: ANN401  (any JSON value)
        """Return the JSON value under ``key`` or None."""

    def cache_put(self, key: str, value: Any) -> None:  # noqa: ANN401
        """Store a JSON value under ``key``."""


@dataclass
class Verdicts:
    """What a device's PM sampling took and refused so far (cached in the store)."""

    chip: str = ""
    accepted: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    one_pass: set[frozenset[str]] = field(default_factory=set)
    several_passes: set[frozenset[str]] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        """The cache form."""
        return {
            "version": CACHE_VERSION,
            "chip": self.chip,
            "accepted": sorted(self.accepted),
            "refused": sorted(self.refused),
            "one_pass": sorted(sorted(s) for s in self.one_pass),
            "several_passes": sorted(sorted(s) for s in self.several_passes),
        }

    @classmethod
    def from_json(cls, data: Any) -> Verdicts:  # noqa: ANN401  (decoded JSON)
        """Read the cache form; anything else gives empty verdicts."""
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return cls()
        try:
            return cls(
                chip=str(data.get("chip", "")),
                accepted={str(m) for m in data.get("accepted", [])},
                refused={str(m) for m in data.get("refused", [])},
                one_pass={frozenset(map(str, s)) for s in data.get("one_pass", [])},
                several_passes={
                    frozenset(map(str, s)) for s in data.get("several_passes", [])
                },
            )
        except TypeError:
            return cls()


class MetricCheck:
    """Says whether PM sampling takes a set of metrics on one device, and if not why.

    Args:
        device: The device's name (the cache key), e.g. ``"NVIDIA H200"``.
        host: The profiler host API of its chip; only asked on a cache miss.
        cache: The run store, or None to keep verdicts in memory only.
    """

    def __init__(
        self, device: str, host: MetricsHost, cache: MetricsCache | None = None
    ) -> None:
        """Load the device's cached verdicts."""
        self.device = device
        self.host = host
        self.cache = cache
        self.verdicts = Verdicts()
        if cache is not None:
            try:
                self.verdicts = Verdicts.from_json(cache.cache_get(self._key))
            except Exception as exc:  # noqa: BLE001  (a cache is an optimisation)
                logger.warning("[nsight-lab] PM metric cache unreadable: %s", exc)
        if self.verdicts.chip and self.verdicts.chip != host.chip:
            self.verdicts = Verdicts()  # another GPU under the same name: start over
        self.verdicts.chip = host.chip
        self._dirty = False

    @property
    def _key(self) -> str:
        return f"{CACHE_PREFIX}{self.device}"

    def _accepts(self, metric: str) -> bool:
        v = self.verdicts
        if metric in v.accepted or metric in v.refused:
            return metric in v.accepted
        try:
            ok = self.host.passes([metric]) == 1
        except ValueError:
            ok = False
        (v.accepted if ok else v.refused).add(metric)
        self._dirty = True
        return ok

    def _one_pass(self, metrics: Iterable[str]) -> bool:
        group = frozenset(metrics)
        v = self.verdicts
        if len(group) <= 1 or group in v.one_pass:
            return True
        if group in v.several_passes or any(s <= group for s in v.several_passes):
            return False
        try:
            ok = self.host.passes(sorted(group)) == 1
        except ValueError:
            ok = False
        (v.one_pass if ok else v.several_passes).add(group)
        self._dirty = True
        return ok

    def groups(self, metrics: Sequence[str]) -> list[list[str]]:
        """Accepted ``metrics`` split greedily into one-pass groups, in order."""
        groups: list[list[str]] = []
        for metric in metrics:
            for group in groups:
                if self._one_pass([*group, metric]):
                    group.append(metric)
                    break
            else:
                groups.append([metric])
        return groups

    def why_not(self, metrics: Sequence[str]) -> str | None:
        """Why PM sampling cannot take ``metrics`` together here, or ``None``.

        ``gpu__time_duration.sum`` is always taken (CUPTI's activity records time
        the regions). The answer is one line: the metrics it refuses (with close
        names it takes), or the groups that would each fit in one pass.
        """
        wanted = [m for m in dict.fromkeys(metrics) if m != TIME_METRIC]
        try:
            refused = [m for m in wanted if not self._accepts(m)]
            if refused:
                return self._refusal(refused)
            if self._one_pass(wanted):
                return None
            groups = self.groups(wanted)
        finally:
            self._save()
        shown = " | ".join(",".join(g) for g in groups)
        return (
            f"--metrics: these {len(wanted)} metrics need {len(groups)} passes of the "
            f"{self.host.chip} counters and PM sampling takes one; these fit "
            f"together: {shown} (profile one group per cell, or use --backend ncu)"
        )

    def _refusal(self, refused: list[str]) -> str:
        """One line: the metrics refused, close names it takes, what to do.

        A close name is on the same unit (the part before ``__``): a typo's fix,
        not another unit's metric (``dram__throughput`` is no hint for a refused
        ``sm__throughput``, the tutorial's pair, though the two spell alike).
        """
        names = ", ".join(refused)
        close: list[str] = []
        try:
            known = self.host.names()
        except Exception:  # noqa: BLE001  (close names are a courtesy)
            known = sorted(self.verdicts.accepted)
        for metric in refused[:3]:
            unit = metric.split("__", 1)[0] + "__"
            same_unit = [m for m in known if m.startswith(unit)]
            close += difflib.get_close_matches(metric, same_unit, n=2, cutoff=0.75)
        hint = ""
        if close:
            hint = f"close names it takes: {', '.join(dict.fromkeys(close))}; "
        return (
            f"--metrics: PM sampling on {self.host.chip} ({self.device}) cannot "
            f"sample {names}; {hint}use --backend ncu for "
            f"{'it' if len(refused) == 1 else 'them'}"
        )

    def _save(self) -> None:
        if not self._dirty or self.cache is None:
            return
        try:
            self.cache.cache_put(self._key, self.verdicts.to_json())
            self._dirty = False
        except Exception as exc:  # noqa: BLE001  (a cache is an optimisation)
            logger.warning("[nsight-lab] PM metric cache not written: %s", exc)
