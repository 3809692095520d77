"""Parse the ``%%nsight`` option line into a frozen :class:`ProfileOptions`.

All validation of user input happens here: every malformed option raises
:class:`~nsight_lab.errors.OptionError` with one line that names the option, quotes the
bad value and says what is accepted. Nothing downstream re-checks the syntax.
"""

from __future__ import annotations

import itertools
import keyword
import math
import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar, get_args

from nsight_lab.errors import OptionError
from nsight_lab.records import TIME_METRIC, JsonScalar

if TYPE_CHECKING:
    from collections.abc import Callable

BackendName = Literal["auto", "cpu", "events", "cupti", "ncu"]
CacheControl = Literal["all", "none"]
ClockControl = Literal["base", "none"]
ThermalMode = Literal["auto", "off"]
CombineMode = Literal["sum", "max", "first"]

BUILTIN_DERIVED = ("tflops", "gbps")
"""Derived metrics nsight-lab computes itself.

Any other ``--derive`` name is a function.
"""

DEFAULT_RUNS = 10
DEFAULT_WARMUP = 2
DEFAULT_MAX_TIME_S = 10.0
"""Cap on the time spent per config.

Applies when ``--target-rsd`` is given without ``--max-time``.
"""
MAX_RUNS = 1_000_000

_METRIC_RE = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(?:__[A-Za-z0-9_]+)*(?:\.[A-Za-z0-9_]+)*$"
)


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
    backend: BackendName = "auto"
    cache_control: CacheControl = "all"
    """``all`` flushes the L2 before each measured region, as ncu and do_bench do."""
    clock_control: ClockControl = "none"
    """``base`` locks the SM clock to its base clock through NVML for the session."""
    thermal: ThermalMode = "auto"
    derive: tuple[str, ...] = ()
    normalize_against: str | None = None
    combine: CombineMode = "sum"
    """How several kernels in one region combine (per-kernel backends only)."""
    target_rsd_pct: float | None = None
    max_time_s: float | None = None
    name: str | None = None
    out: str | None = None
    isolate: bool = False
    quiet: bool = False
    given: tuple[str, ...] = field(default=(), compare=False)
    """The options the user wrote, for the record of the session."""

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the grid parameters, in order."""
        return tuple(name for name, _ in self.params)

    def configs(self) -> list[dict[str, JsonScalar]]:
        """Return the cartesian product of the parameter grid.

        One empty config if there are no parameters.
        """
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
        """Return the options as a JSON-able dict (stored with the session)."""
        return {
            "params": {name: list(vals) for name, vals in self.params},
            "runs": self.runs,
            "warmup": self.warmup,
            "metrics": list(self.metrics),
            "backend": self.backend,
            "cache_control": self.cache_control,
            "clock_control": self.clock_control,
            "thermal": self.thermal,
            "derive": list(self.derive),
            "normalize_against": self.normalize_against,
            "combine": self.combine,
            "target_rsd_pct": self.target_rsd_pct,
            "max_time_s": self.max_time_s,
            "name": self.name,
            "out": self.out,
            "isolate": self.isolate,
            "quiet": self.quiet,
        }


_T = TypeVar("_T")


def _choice(option: str, allowed: tuple[_T, ...]) -> Callable[[str], _T]:
    def parse(raw: str) -> _T:
        for value in allowed:
            if raw == value:
                return value
        expected = ", ".join(repr(a) for a in allowed)
        msg = f"{option}: unknown value {raw!r}; expected one of {expected}"
        raise OptionError(msg)

    return parse


def _int(option: str, minimum: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw, 10)
        except ValueError:
            value = None
        if value is None or value < minimum or value > MAX_RUNS:
            kind = "a positive integer" if minimum >= 1 else "an integer >= 0"
            msg = f"{option}: expected {kind} (at most {MAX_RUNS}), got {raw!r}"
            raise OptionError(msg)
        return value

    return parse


def _positive_float(option: str, upper: float | None = None) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if (
            not math.isfinite(value)
            or value <= 0
            or (upper is not None and value >= upper)
        ):
            bound = f" below {upper:g}" if upper is not None else ""
            msg = f"{option}: expected a positive number{bound}, got {raw!r}"
            raise OptionError(msg)
        return value

    return parse


def parse_value(raw: str) -> JsonScalar:
    """Read one config value: an int, a float, true/false/none, else the text itself."""
    text = raw.strip()
    low = text.lower()
    if low in {"true", "false"}:
        return low == "true"
    if low == "none":
        return None
    try:
        return int(text, 0) if not re.fullmatch(r"0\d+", text) else int(text, 10)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text


def _value_list(option: str, raw: str) -> tuple[JsonScalar, ...]:
    items = raw.split(",")
    if any(not item.strip() for item in items):
        msg = (
            f"{option}: empty value in {raw!r}; "
            "give comma-separated values like 512,1024"
        )
        raise OptionError(msg)
    values = tuple(parse_value(item) for item in items)
    if len(set(map(repr, values))) != len(values):
        msg = f"{option}: repeated value in {raw!r}; each value may appear once"
        raise OptionError(msg)
    return values


def _identifier(option: str, raw: str, what: str) -> str:
    if not raw.isidentifier() or keyword.iskeyword(raw):
        msg = f"{option}: {raw!r} is not a valid Python name; give {what}"
        raise OptionError(msg)
    return raw


def _names(option: str, raw: str, check: Callable[[str], str]) -> tuple[str, ...]:
    items = [item.strip() for item in raw.split(",")]
    if any(not item for item in items):
        msg = f"{option}: empty name in {raw!r}; give comma-separated names"
        raise OptionError(msg)
    return tuple(check(item) for item in items)


def _metric(raw: str) -> str:
    if not _METRIC_RE.match(raw):
        msg = (
            f"--metrics: {raw!r} is not a Nsight Compute metric name "
            "(like dram__bytes_read.sum); list them with: ncu --query-metrics"
        )
        raise OptionError(msg)
    return raw


def _derived(raw: str) -> str:
    return (
        raw
        if raw in BUILTIN_DERIVED
        else _identifier(
            "--derive", raw, "tflops, gbps or the name of a function in the notebook"
        )
    )


_FLAGS = frozenset({"--isolate", "--quiet"})
_REPEATABLE = frozenset({"--param"})
_VALUED = (
    "--configs",
    "--param",
    "--runs",
    "--warmup",
    "--metrics",
    "--backend",
    "--cache-control",
    "--clock-control",
    "--thermal",
    "--derive",
    "--normalize-against",
    "--combine",
    "--target-rsd",
    "--max-time",
    "--name",
    "--out",
)
KNOWN_OPTIONS: tuple[str, ...] = (*_VALUED, *sorted(_FLAGS))


def _tokens(line: str) -> list[tuple[str, str | None]]:
    """Split the line into (option, value) pairs; values may follow ``=`` or a space."""
    try:
        words = shlex.split(line, posix=True)
    except ValueError as exc:
        msg = f"options could not be read ({exc}); check the quotes in {line.strip()!r}"
        raise OptionError(msg) from exc
    pairs: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--") or word == "--":
            msg = (
                f"unexpected argument {word!r}; options start with '--' "
                "(see %nsight --help)"
            )
            raise OptionError(msg)
        name, eq, inline = word.partition("=")
        if name not in KNOWN_OPTIONS:
            msg = f"unknown option {name!r}; expected one of {', '.join(KNOWN_OPTIONS)}"
            raise OptionError(msg)
        if name in _FLAGS:
            if eq:
                msg = f"{name} takes no value, got {inline!r}"
                raise OptionError(msg)
            pairs.append((name, None))
            i += 1
            continue
        if eq:
            value: str | None = inline
            i += 1
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            i += 2
        else:
            value = None
            i += 1
        if value is None or value == "":
            msg = f"{name} needs a value (see %nsight --help)"
            raise OptionError(msg)
        pairs.append((name, value))
    return pairs


def parse_options(line: str) -> ProfileOptions:  # noqa: C901, PLR0912, PLR0915
    """Parse a ``%%nsight`` option line.

    Args:
        line: The text after ``%%nsight`` on the cell's first line.

    Returns:
        The validated options.

    Raises:
        OptionError: An option is unknown, repeated, missing its value or malformed;
            the message is one line naming it.
    """
    seen: set[str] = set()
    params: list[tuple[str, tuple[JsonScalar, ...]]] = []
    kw: dict[str, object] = {}
    for name, value in _tokens(line):
        if name in seen and name not in _REPEATABLE:
            msg = f"{name} was given twice; give it once"
            raise OptionError(msg)
        seen.add(name)
        if value is None:
            kw[name.removeprefix("--")] = True
            continue
        if name == "--configs":
            params.insert(0, ("n", _value_list(name, value)))
        elif name == "--param":
            pname, eq, vals = value.partition("=")
            if not eq:
                msg = f"--param: expected NAME=v1,v2,... got {value!r}"
                raise OptionError(msg)
            pname = _identifier("--param", pname.strip(), "NAME=v1,v2,...")
            params.append((pname, _value_list(f"--param {pname}", vals)))
        elif name == "--runs":
            kw["runs"] = _int(name, 1)(value)
        elif name == "--warmup":
            kw["warmup"] = _int(name, 0)(value)
        elif name == "--metrics":
            metrics = _names(name, value, _metric)
            kw["metrics"] = (
                TIME_METRIC,
                *dict.fromkeys(m for m in metrics if m != TIME_METRIC),
            )
        elif name == "--backend":
            kw["backend"] = _choice(name, get_args(BackendName))(value)
        elif name == "--cache-control":
            kw["cache_control"] = _choice(name, get_args(CacheControl))(value)
        elif name == "--clock-control":
            kw["clock_control"] = _choice(name, get_args(ClockControl))(value)
        elif name == "--thermal":
            kw["thermal"] = _choice(name, get_args(ThermalMode))(value)
        elif name == "--combine":
            kw["combine"] = _choice(name, get_args(CombineMode))(value)
        elif name == "--derive":
            kw["derive"] = tuple(dict.fromkeys(_names(name, value, _derived)))
        elif name == "--normalize-against":
            kw["normalize_against"] = value
        elif name == "--target-rsd":
            kw["target_rsd_pct"] = _positive_float(name, 100.0)(value)
        elif name == "--max-time":
            kw["max_time_s"] = _positive_float(name)(value)
        elif name == "--name":
            kw["name"] = value
        elif name == "--out":
            kw["out"] = _identifier(name, value, "a variable name for the DataFrame")
    names = [p for p, _ in params]
    dup = next((p for p in names if names.count(p) > 1), None)
    if dup is not None:
        how = "--configs binds 'n'; " if dup == "n" and "--configs" in seen else ""
        msg = f"--param: parameter {dup!r} is given twice; {how}give each name once"
        raise OptionError(msg)
    if kw.get("target_rsd_pct") is not None and kw.get("max_time_s") is None:
        kw["max_time_s"] = DEFAULT_MAX_TIME_S
    return ProfileOptions(
        params=tuple(params),
        given=tuple(sorted(seen)),
        **kw,  # type: ignore[arg-type]
    )
