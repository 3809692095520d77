"""What one ``%%nsight`` cell asked for: :class:`ProfileOptions` and its defaults.

The frozen, validated result of :func:`~nsight_lab.options.parse.parse_options`
(also built by nsight-python's API): its fields and their defaults, the parameter
grid it describes (refused before it is laid out when too large) and its JSON form
stored with the session. Nothing here reads user text.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Literal, get_args

from nsight_lab.contract.records import TIME_METRIC, JsonScalar
from nsight_lab.errors import OptionError

if TYPE_CHECKING:
    from collections.abc import Callable

CacheControl = Literal["all", "none"]
ClockControl = Literal["base", "none"]
ThermalMode = Literal["auto", "manual", "off"]
CombineMode = Literal["sum", "max", "first", "single"]
"""The built-in ways to fold a region's kernels; ``--combine`` also takes a function.

``single``: each region must launch one kernel (nsight-python's default).
"""
BUILTIN_FOLDS: tuple[str, ...] = get_args(CombineMode)
"""The words of :data:`CombineMode`; any other ``--combine`` names a function."""
ReplayMode = Literal["kernel", "range"]


DEFAULT_RUNS = 10
DEFAULT_SAMPLE_INTERVAL_US = 20
"""The pm backend's sampling interval: a 100 µs region spans at least 5 samples."""
MAX_SAMPLE_INTERVAL_US = 1_000_000
DEFAULT_WARMUP = 2
DEFAULT_MAX_TIME_S = 10.0
"""Cap on the time spent per config.

Applies when ``--target-rsd`` is given without ``--max-time``.
"""


DEFAULT_MAX_CONFIGS = 10_000
"""Largest config grid accepted without ``--max-configs``."""
MAX_CONFIGS = 10_000
"""Largest value of ``--max-configs``: the largest grid measured to work end to end.

Every read path of a session (the cell's end, ``show``, ``compare``, ``export``, the
server's list and session view) is measured at this grid by
``benchmarks/huge_sessions.py`` (``benchmarks/results/huge_sessions_cpu.json``):
at 1,000,000 configs ``show`` took 492 s and 17.5 GB and the session view never
answered; at 100,000, 59 s / 1.8 GB and 55 s / 1.3 GB. A larger value is refused
in one line naming this limit."""


@dataclass(frozen=True)
class ThermalSettings:
    """``--thermal-settings``: nsight-python's thermal_wait/cont/timeout/device.

    ``None`` keeps the default (10 and 20 deg C of headroom, 180 s, the profiled GPU).
    """

    wait_c: float | None = None
    """Pause before a run when the thermal headroom is at or below this (deg C)."""
    cont_c: float | None = None
    """Resume once the headroom is back to this (deg C); above ``wait_c``."""
    timeout_s: float | None = None
    """The longest wait for the GPU to cool, then go on."""
    device: int | None = None
    """The CUDA device whose temperature is watched (default: the profiled one)."""


@dataclass(frozen=True)
class ProfileOptions:
    """What one ``%%nsight`` cell asked for, validated."""

    params: tuple[tuple[str, tuple[JsonScalar, ...]], ...] = ()
    """Parameter grid in the order given.

    ``--configs`` binds ``n``; ``--param`` the rest.
    """
    runs: int = DEFAULT_RUNS
    """Runs per config (the minimum when ``--target-rsd`` is given)."""
    warmup: int = DEFAULT_WARMUP
    """Untimed runs per config before the measured ones."""
    metrics: tuple[str, ...] = (TIME_METRIC,)
    """Nsight Compute metric names; the region time is always measured."""
    backend: str = "auto"
    """``auto`` or a backend id from the registry (see :func:`backend_choices`)."""
    cache_control: CacheControl = "all"
    """``all`` flushes the L2 before each measured region, as ncu and do_bench do."""
    clock_control: ClockControl = "none"
    """``base`` locks the SM clock to its base clock through NVML for the session."""
    thermal: ThermalMode = "auto"
    thermal_settings: ThermalSettings | None = None
    """``--thermal-settings``: the thresholds ``auto`` and ``manual`` wait by."""
    derive: tuple[str, ...] = ()
    normalize_against: str | None = None
    combine: str = "sum"
    """How several kernels in one region combine (per-kernel backends only).

    A :data:`CombineMode` word, or the name of a binary function (``combine_fn``).
    """
    combine_fn: Callable[[float, float], float] | None = field(
        default=None, compare=False, repr=False, metadata={"runtime": True}
    )
    """The function ``combine`` names, resolved from the notebook (not stored)."""
    ignore_kernels: tuple[str, ...] = ()
    """Kernel names left out of every region (nsight-python's ignore_kernel_list)."""
    replay_mode: ReplayMode = "kernel"
    """nsight-python's ``replay_mode``: ``range`` times each region as one range."""
    output_csv: str | None = None
    """``--output-csv PREFIX``: write nsight-python's raw and processed CSV files."""
    configs_from: str | None = None
    """``--configs-from [NAMES=]VAR``: the configs, an explicit list in the notebook."""
    target_rsd_pct: float | None = None
    max_time_s: float | None = None
    name: str | None = None
    out: str | None = None
    isolate: bool = False
    quiet: bool = False
    max_configs: int | None = None
    """``--max-configs``: the largest grid accepted.

    :data:`DEFAULT_MAX_CONFIGS` when not given.
    """
    sample_interval_us: int = DEFAULT_SAMPLE_INTERVAL_US
    """PM sampling interval of the ``pm`` backend, in µs."""
    baseline: str | None = None
    """``--baseline NAME``: judge the session against this named baseline."""
    ranks: int | None = None
    """``--ranks N``: run the cell in N torch.distributed ranks (one per GPU; gloo
    processes on the cpu backend); ``None``: in this process, one rank."""
    given: tuple[str, ...] = field(default=(), compare=False)
    """The options the user wrote, for the record of the session."""

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the grid parameters, in order."""
        return tuple(name for name, _ in self.params)

    @property
    def config_limit(self) -> int:
        """The most configs this grid may have (``--max-configs`` or the default)."""
        return self.max_configs or DEFAULT_MAX_CONFIGS

    def grid_size(self) -> int:
        """Number of configs in the grid, computed without laying it out."""
        return math.prod(len(vals) for _, vals in self.params)

    def check_grid(self) -> None:
        """Refuse a grid larger than :attr:`config_limit` before it is laid out.

        Raises:
            OptionError: The grid has too many configs; says how many and what to do.
        """
        limit = self.config_limit
        size = 1
        for _, vals in self.params:
            size *= len(vals)
            if size > limit:
                break
        else:
            return
        digits = sum(math.log10(len(vals)) for _, vals in self.params)
        count = (
            f"{self.grid_size():,}" if digits < 15 else f"about 10^{int(digits)}"  # noqa: PLR2004
        )
        if self.max_configs is None and DEFAULT_MAX_CONFIGS < MAX_CONFIGS:
            how = (
                f"at most {DEFAULT_MAX_CONFIGS:,} unless --max-configs N is given "
                f"(up to {MAX_CONFIGS:,}); give fewer values"
            )
        elif self.max_configs is None or limit >= MAX_CONFIGS:
            how = (
                f"at most {MAX_CONFIGS:,} (--max-configs's maximum, the largest grid "
                "measured to work); "
                "give fewer values or split the grid over several cells"
            )
        else:
            how = f"above --max-configs {limit:,}; give fewer values or raise it"
        only_configs = self.param_names == ("n",) and "--configs" in self.given
        option = "--configs" if only_configs else "--param"
        params = len(self.params)
        msg = (
            f"{option}: the grid has {count} configs "
            f"({params} parameter{'' if params == 1 else 's'}), {how}"
        )
        raise OptionError(msg)

    def configs(self) -> list[dict[str, JsonScalar]]:
        """Return the cartesian product of the parameter grid.

        One empty config if there are no parameters.

        Raises:
            OptionError: The grid is larger than :attr:`config_limit`.
        """
        self.check_grid()
        names = self.param_names
        values = [vals for _, vals in self.params]
        return [
            dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)
        ]

    @property
    def extra_metrics(self) -> tuple[str, ...]:
        """Requested metrics other than the region time."""
        return tuple(m for m in self.metrics if m != TIME_METRIC)

    def to_json(self) -> dict[str, object]:
        """Return the options as a JSON-able dict (stored with the session).

        Every field but ``given`` and the runtime ones (``combine_fn``), in field
        order; ``params`` as ``{name: [values]}``, other tuples as lists and
        ``thermal_settings`` as a dict.
        """
        out: dict[str, object] = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name == "given" or spec.metadata.get("runtime"):
                continue
            if spec.name == "params":
                value = {name: list(vals) for name, vals in value}
            elif isinstance(value, tuple):
                value = list(value)
            elif is_dataclass(value) and not isinstance(value, type):
                value = asdict(value)
            out[spec.name] = value
        return out
