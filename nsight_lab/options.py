"""Parse the ``%%nsight`` option line into a frozen :class:`ProfileOptions`.

All validation of user input happens here: every malformed option raises
:class:`~nsight_lab.errors.OptionError` with one line that names the option, quotes the
bad value and says what is accepted. Nothing downstream re-checks the syntax.
"""

from __future__ import annotations

import builtins
import difflib
import itertools
import keyword
import math
import re
import shlex
import unicodedata
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Literal, TypeVar, get_args

from nsight_lab.errors import OptionError
from nsight_lab.records import TIME_METRIC, JsonScalar

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

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
DEFAULT_MAX_CONFIGS = 10_000
"""Largest config grid accepted without ``--max-configs``."""
MAX_CONFIGS = 1_000_000
"""Largest value of ``--max-configs``: the grid is laid out in memory."""
MAX_LINE_CHARS = 65_536
"""Longest option line read (longer lines are refused before they are split)."""
MAX_NAME_CHARS = 100
"""Longest parameter, ``--out`` or ``--derive`` name."""
MAX_LABEL_CHARS = 1_000
"""Longest ``--name`` label or ``--normalize-against`` annotation name."""
ECHO_CHARS = 80
"""How much of a bad value an error message quotes."""
_INT_DIGITS = 19
"""More digits than this are beyond a 64-bit integer: refused before ``int()``."""
_INT64 = 2**63

_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
IPYTHON_NAMES = frozenset(
    {"get_ipython", "In", "Out", "exit", "quit", "_", "__", "___", "_i", "_ii", "_iii",
     "_ih", "_oh", "_dh"}
)  # fmt: skip
"""Names IPython keeps in the user namespace (plus ``_iN``/``_N``, matched apart)."""
_IPYTHON_NUMBERED = re.compile(r"_i?[0-9]+")

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
    max_configs: int | None = None
    """``--max-configs``: the largest grid accepted.

    :data:`DEFAULT_MAX_CONFIGS` when not given.
    """
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
        if self.max_configs is None:
            how = (
                f"at most {DEFAULT_MAX_CONFIGS:,} unless --max-configs N is given "
                f"(up to {MAX_CONFIGS:,}); give fewer values"
            )
        else:
            how = f"above --max-configs {limit:,}; give fewer values or raise it"
        only_configs = self.param_names == ("n",) and "--configs" in self.given
        option = "--configs" if only_configs else "--param"
        msg = (
            f"{option}: the grid has {count} configs "
            f"({len(self.params)} parameters), {how}"
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
            "max_configs": self.max_configs,
        }


_T = TypeVar("_T")


def shown(raw: str, limit: int = ECHO_CHARS) -> str:
    """Quote ``raw`` for an error message: ``repr``, cut to ``limit`` characters.

    ``repr`` escapes control characters and lone surrogates, so the quote is always
    printable; a longer value keeps its start and says how long it was.
    """
    if len(raw) <= limit:
        return repr(raw)
    return f"{raw[:limit]!r}... ({len(raw):,} characters)"


def unsafe_character(text: str) -> str | None:
    """Return the first control character, lone surrogate or bidi override in ``text``.

    ``None`` when there is none. Tabs count: option values never need them.
    """
    for char in text:
        if char in _BIDI_CONTROLS or unicodedata.category(char) in {"Cc", "Cs"}:
            return char
    return None


def _check_text(option: str, raw: str) -> str:
    char = unsafe_character(raw)
    if char is not None:
        msg = (
            f"{option}: the value {shown(raw)} contains the character "
            f"U+{ord(char):04X} (a control character, lone surrogate or bidi "
            "override); remove it"
        )
        raise OptionError(msg)
    return raw


def reserved_name(name: str) -> str | None:
    """Say why binding ``name`` in the notebook would break it, or ``None``.

    Python builtins, IPython's own names (``get_ipython``, ``In``, ``Out``, ``_``,
    ``_i3``, ...) and dunder names are reserved whatever the namespace holds.
    """
    if name.startswith("__") and name.endswith("__") and len(name) > 4:  # noqa: PLR2004
        return "a Python special (dunder) name"
    if name in IPYTHON_NAMES or _IPYTHON_NUMBERED.fullmatch(name):
        return "a name IPython keeps in the notebook"
    if hasattr(builtins, name):
        return "a Python builtin"
    return None


def check_bindings(options: ProfileOptions, namespace: Mapping[str, object]) -> None:
    """Refuse parameter and ``--out`` names that would replace the notebook's callables.

    Run with the kernel's namespace before anything is stored: a parameter bound over
    a function, class or module the user defined would break later cells. Plain
    variables may be rebound (that is what a parameter does).

    Raises:
        OptionError: A name given would replace a callable or module in ``namespace``.
    """
    bound = [
        ("--configs" if name == "n" and "--configs" in options.given else
         f"--param {name}", name)
        for name in options.param_names
    ]  # fmt: skip
    if options.out:
        bound.append(("--out", options.out))
    for option, name in bound:
        value = namespace.get(name)
        if value is not None and (callable(value) or isinstance(value, ModuleType)):
            what = "module" if isinstance(value, ModuleType) else "callable"
            msg = (
                f"{option}: {name!r} is a {what} defined in the notebook and would be "
                f"replaced; choose another name (e.g. {name}_value)"
            )
            raise OptionError(msg)


def _choice(option: str, allowed: tuple[_T, ...]) -> Callable[[str], _T]:
    def parse(raw: str) -> _T:
        for value in allowed:
            if raw == value:
                return value
        expected = ", ".join(repr(a) for a in allowed)
        msg = f"{option}: unknown value {shown(raw)}; expected one of {expected}"
        raise OptionError(msg)

    return parse


def _int(option: str, minimum: int, maximum: int = MAX_RUNS) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = None
        text = raw.strip()
        if re.fullmatch(r"[+-]?[0-9]{1,%d}" % _INT_DIGITS, text, re.ASCII):  # noqa: UP031
            value = int(text, 10)  # digits checked first: never int() on 100k digits
        if value is None or value < minimum or value > maximum:
            kind = "a positive integer" if minimum >= 1 else "an integer >= 0"
            msg = f"{option}: expected {kind} (at most {maximum:,}), got {shown(raw)}"
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
            msg = f"{option}: expected a positive number{bound}, got {shown(raw)}"
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
    if len(text) <= _INT_DIGITS + 2:  # longer: not an int (see _value_list)
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
    _check_text(option, raw)
    items = raw.split(",")
    if any(not item.strip() for item in items):
        msg = (
            f"{option}: empty value in {shown(raw)}; "
            "give comma-separated values like 512,1024"
        )
        raise OptionError(msg)
    for item in items:
        text = item.strip().replace("_", "")
        if len(text) > _INT_DIGITS + 2 and re.fullmatch(r"[+-]?[0-9]+", text, re.ASCII):
            msg = (
                f"{option}: the value {shown(item.strip())} is too large; "
                "integers must fit in 64 bits"
            )
            raise OptionError(msg)
    values = tuple(parse_value(item) for item in items)
    for value in values:
        if isinstance(value, int) and not -_INT64 <= value < _INT64:
            msg = (
                f"{option}: the value {shown(str(value))} is too large; "
                "integers must fit in 64 bits"
            )
            raise OptionError(msg)
    if len(set(map(repr, values))) != len(values):
        msg = f"{option}: repeated value in {shown(raw)}; each value may appear once"
        raise OptionError(msg)
    return values


def _identifier(option: str, raw: str, what: str) -> str:
    if not raw.isidentifier() or keyword.iskeyword(raw):
        msg = f"{option}: {shown(raw)} is not a valid Python name; give {what}"
        raise OptionError(msg)
    if len(raw) > MAX_NAME_CHARS:
        msg = (
            f"{option}: the name {shown(raw)} is too long; "
            f"give at most {MAX_NAME_CHARS} characters"
        )
        raise OptionError(msg)
    return raw


def _binding(option: str, raw: str, what: str) -> str:
    """A name the magic binds in the notebook: also not a builtin or IPython's."""
    name = _identifier(option, raw, what)
    why = reserved_name(name)
    if why is not None:
        msg = (
            f"{option}: {name!r} is {why}; binding it would break later cells, "
            f"choose another name (e.g. {name.strip('_') or 'x'}_value)"
        )
        raise OptionError(msg)
    return name


def _names(option: str, raw: str, check: Callable[[str], str]) -> tuple[str, ...]:
    items = [item.strip() for item in raw.split(",")]
    if any(not item for item in items):
        msg = f"{option}: empty name in {shown(raw)}; give comma-separated names"
        raise OptionError(msg)
    return tuple(check(item) for item in items)


def _metric(raw: str) -> str:
    if not _METRIC_RE.match(raw):
        msg = (
            f"--metrics: {shown(raw)} is not a Nsight Compute metric name "
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


def _label(option: str, raw: str, what: str) -> str:
    if len(raw) > MAX_LABEL_CHARS:
        msg = (
            f"{option}: the value {shown(raw)} is too long; "
            f"give {what} of at most {MAX_LABEL_CHARS:,} characters"
        )
        raise OptionError(msg)
    return raw


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
    "--max-configs",
)
KNOWN_OPTIONS: tuple[str, ...] = (*_VALUED, *sorted(_FLAGS))


def _words(line: str) -> list[str]:
    """Split the line as a shell would (quotes group words)."""
    if len(line) > MAX_LINE_CHARS:
        msg = (
            f"%%nsight: the option line is {len(line):,} characters long; "
            f"give at most {MAX_LINE_CHARS:,}"
        )
        raise OptionError(msg)
    try:
        return shlex.split(line, posix=True)
    except ValueError as exc:
        quoted = shown(line.strip())
        msg = f"options could not be read ({exc}); check the quotes in {quoted}"
        raise OptionError(msg) from exc


def _tokens(line: str) -> list[tuple[str, str | None]]:
    """Split the line into (option, value) pairs; values may follow ``=`` or a space."""
    words = _words(line)
    pairs: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--") or word == "--":
            msg = (
                f"unexpected argument {shown(word)}; options start with '--' "
                "(see %nsight --help)"
            )
            raise OptionError(msg)
        name, eq, inline = word.partition("=")
        if name not in KNOWN_OPTIONS:
            close = difflib.get_close_matches(name[:40], KNOWN_OPTIONS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            msg = f"unknown option {shown(name)}; {hint}see %nsight --help for options"
            raise OptionError(msg)
        if name in _FLAGS:
            if eq:
                msg = f"{name} takes no value, got {shown(inline)}"
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
        pairs.append((name, _check_text(name, value)))
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
                msg = f"--param: expected NAME=v1,v2,... got {shown(value)}"
                raise OptionError(msg)
            pname = _binding("--param", pname.strip(), "NAME=v1,v2,...")
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
            kw["normalize_against"] = _label(name, value, "an annotation name")
        elif name == "--target-rsd":
            kw["target_rsd_pct"] = _positive_float(name, 100.0)(value)
        elif name == "--max-time":
            kw["max_time_s"] = _positive_float(name)(value)
        elif name == "--name":
            kw["name"] = _label(name, value, "a shorter label")
        elif name == "--out":
            kw["out"] = _binding(name, value, "a variable name for the DataFrame")
        elif name == "--max-configs":
            kw["max_configs"] = _int(name, 1, MAX_CONFIGS)(value)
    names = [p for p, _ in params]
    dup = next((p for p in names if names.count(p) > 1), None)
    if dup is not None:
        how = "--configs binds 'n'; " if dup == "n" and "--configs" in seen else ""
        msg = f"--param: parameter {dup!r} is given twice; {how}give each name once"
        raise OptionError(msg)
    if kw.get("target_rsd_pct") is not None and kw.get("max_time_s") is None:
        kw["max_time_s"] = DEFAULT_MAX_TIME_S
    options = ProfileOptions(
        params=tuple(params),
        given=tuple(sorted(seen)),
        **kw,  # type: ignore[arg-type]
    )
    options.check_grid()
    return options
