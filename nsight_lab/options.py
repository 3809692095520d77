"""Parse the ``%%nsight`` option line into a frozen :class:`ProfileOptions`.

The options are declared once, in :data:`OPTIONS`: each entry's flag, value syntax,
reader, choices and texts. The parser (:func:`parse_options`), the ``%nsight help`` text
(:func:`help_text`) and the README's options table (:func:`options_markdown`, checked
against README.md by a test) are all produced from it; the defaults are those of
:class:`ProfileOptions`' fields. ``python -m nsight_lab.options --markdown`` prints the
README table.

All validation of user input happens here: every malformed option raises
:class:`~nsight_lab.errors.OptionError` with one line that names the option, quotes the
bad value (at most :data:`ECHO_CHARS` characters) and says what is accepted. Nothing
downstream re-checks the syntax.
"""

from __future__ import annotations

import builtins
import difflib
import itertools
import keyword
import math
import re
import shlex
import sys
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Literal, get_args

from nsight_lab.errors import OptionError
from nsight_lab.records import TIME_METRIC, JsonScalar
from nsight_lab.safetext import unsafe_character

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

CacheControl = Literal["all", "none"]
ClockControl = Literal["base", "none"]
ThermalMode = Literal["auto", "manual", "off"]
CombineMode = Literal["sum", "max", "first", "single"]
"""The built-in ways to fold a region's kernels; ``--combine`` also takes a function.

``single``: each region must launch one kernel (nsight-python's default).
"""
ReplayMode = Literal["kernel", "range"]

BUILTIN_DERIVED = ("tflops", "gbps")
"""Derived metrics nsight-lab computes itself.

Any other ``--derive`` name is a function.
"""

DEFAULT_RUNS = 10
DEFAULT_SAMPLE_INTERVAL_US = 20
"""The pm backend's sampling interval: a 100 µs region spans at least 5 samples."""
MAX_SAMPLE_INTERVAL_US = 1_000_000
DEFAULT_WARMUP = 2
DEFAULT_MAX_TIME_S = 10.0
"""Cap on the time spent per config.

Applies when ``--target-rsd`` is given without ``--max-time``.
"""
MAX_RUNS = 1_000_000
MAX_RANKS = 1_024
"""Largest ``--ranks``: more processes than this is no notebook's profile."""
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
        if self.max_configs is None:
            how = (
                f"at most {DEFAULT_MAX_CONFIGS:,} unless --max-configs N is given "
                f"(up to {MAX_CONFIGS:,}); give fewer values"
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


def whole_number(raw: str, minimum: int, maximum: int) -> int | None:
    """``raw`` (stripped) as an integer in ``[minimum, maximum]``, else ``None``.

    ASCII digits with an optional sign, at most :data:`_INT_DIGITS` of them, counted
    before ``int()``: Python refuses texts of over 4,300 digits, and converting long
    ones is quadratic. ``'²'`` and other Unicode digits are refused.
    """
    text = raw.strip()
    if not re.fullmatch(r"[+-]?[0-9]{1,%d}" % _INT_DIGITS, text, re.ASCII):  # noqa: UP031
        return None
    value = int(text, 10)
    return value if minimum <= value <= maximum else None


def shown(raw: str, limit: int = ECHO_CHARS) -> str:
    """Quote ``raw`` for an error message: ``repr``, cut to ``limit`` characters.

    ``repr`` escapes control characters and lone surrogates, so the quote is always
    printable; a longer value keeps its start and says how long it was.
    """
    if len(raw) <= limit:
        return repr(raw)
    return f"{raw[:limit]!r}... ({len(raw):,} characters)"


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


def _choice(option: str, raw: str, allowed: tuple[str, ...]) -> str:
    for value in allowed:
        if raw == value:
            return value
    expected = ", ".join(repr(a) for a in allowed)
    msg = f"{option}: unknown value {shown(raw)}; expected one of {expected}"
    raise OptionError(msg)


def _int(minimum: int, maximum: int = MAX_RUNS) -> Callable[[str, str], int]:
    """Reader of an integer in ``[minimum, maximum]``; digits are counted first."""

    def parse(option: str, raw: str) -> int:
        value = whole_number(raw, minimum, maximum)
        if value is None:
            kind = "a positive integer" if minimum >= 1 else "an integer >= 0"
            msg = f"{option}: expected {kind} (at most {maximum:,}), got {shown(raw)}"
            raise OptionError(msg)
        return value

    return parse


def _positive_float(upper: float | None = None) -> Callable[[str, str], float]:
    """Reader of a finite number above 0 (and below ``upper`` when given)."""

    def parse(option: str, raw: str) -> float:
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


def _label(what: str) -> Callable[[str, str], str]:
    """Reader of free text of at most :data:`MAX_LABEL_CHARS` characters."""

    def parse(option: str, raw: str) -> str:
        if len(raw) > MAX_LABEL_CHARS:
            msg = (
                f"{option}: the value {shown(raw)} is too long; "
                f"give {what} of at most {MAX_LABEL_CHARS:,} characters"
            )
            raise OptionError(msg)
        return raw

    return parse


def _read_configs(option: str, raw: str) -> tuple[str, tuple[JsonScalar, ...]]:
    return ("n", _value_list(option, raw))


def _read_param(option: str, raw: str) -> tuple[str, tuple[JsonScalar, ...]]:
    pname, eq, vals = raw.partition("=")
    if not eq:
        msg = f"{option}: expected NAME=v1,v2,... got {shown(raw)}"
        raise OptionError(msg)
    pname = _binding(option, pname.strip(), "NAME=v1,v2,...")
    return (pname, _value_list(f"{option} {pname}", vals))


def _read_metrics(option: str, raw: str) -> tuple[str, ...]:
    metrics = _names(option, raw, _metric)
    return (TIME_METRIC, *dict.fromkeys(m for m in metrics if m != TIME_METRIC))


def _read_derive(option: str, raw: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_names(option, raw, _derived)))


def _read_out(option: str, raw: str) -> str:
    return _binding(option, raw, "a variable name for the DataFrame")


def _read_combine(option: str, raw: str) -> str:
    if raw in get_args(CombineMode):
        return raw
    what = (
        f"one of {', '.join(repr(m) for m in get_args(CombineMode))} or the name of a "
        "function f(x, y) in the notebook"
    )
    return _identifier(option, raw, what)


def split_kernel_names(raw: str) -> list[str]:
    """``raw`` split at the commas outside ``<...>``, ``(...)`` and ``[...]``.

    Kernel names hold commas in their template and parameter lists
    (``void gemm<float, 128>(...)``); those stay inside the name.
    """
    names: list[str] = []
    depth = 0
    start = 0
    for i, char in enumerate(raw):
        if char in "<([":
            depth += 1
        elif char in ">)]":
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            names.append(raw[start:i].strip())
            start = i + 1
    names.append(raw[start:].strip())
    return names


def _read_ignore_kernels(option: str, raw: str) -> tuple[str, ...]:
    names = split_kernel_names(raw)
    if any(not name for name in names):
        msg = (
            f"{option}: empty kernel name in {shown(raw)}; give comma-separated "
            "kernel names (quote names with spaces)"
        )
        raise OptionError(msg)
    return tuple(names)


_THERMAL_KEYS = ("wait", "cont", "timeout", "device")


def _read_thermal_settings(option: str, raw: str) -> ThermalSettings:
    values: dict[str, float] = {}
    for item in raw.split(","):
        key, eq, text = (part.strip() for part in item.partition("="))
        if not eq or key not in _THERMAL_KEYS or key in values:
            msg = (
                f"{option}: expected wait=C,cont=C,timeout=S,device=N (each at most "
                f"once, any of them), got {shown(raw)}"
            )
            raise OptionError(msg)
        if key == "device":
            values[key] = _int(0, 1_024)(f"{option} device", text)
        else:
            values[key] = _positive_float()(f"{option} {key}", text)
    wait, cont = values.get("wait"), values.get("cont")
    if wait is not None and cont is not None and cont <= wait:
        msg = (
            f"{option}: cont ({cont:g} C) must be above wait ({wait:g} C): wait is the "
            "headroom that pauses the runs, cont the headroom they resume at"
        )
        raise OptionError(msg)
    return ThermalSettings(
        wait_c=values.get("wait"),
        cont_c=values.get("cont"),
        timeout_s=values.get("timeout"),
        device=int(values["device"]) if "device" in values else None,
    )


MAX_BASELINE_CHARS = 64
"""Longest baseline name."""
_BASELINE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def _read_baseline(option: str, raw: str) -> str:
    """Read a baseline name; whether it exists is the store's to say.

    A letter or ``_`` first (so a name never reads as a session id), then letters,
    digits, ``_``, ``.`` and ``-``; the magic asks the store before it profiles.
    """
    if len(raw) > MAX_BASELINE_CHARS or not _BASELINE_RE.fullmatch(raw):
        msg = (
            f"{option}: {shown(raw)} is not a baseline name; give a letter or _ first, "
            f"then letters, digits, _ . - (at most {MAX_BASELINE_CHARS}); "
            "list them with %nsight baseline list"
        )
        raise OptionError(msg)
    return raw


def _read_configs_from(option: str, raw: str) -> str:
    names, eq, var = raw.rpartition("=")
    if eq:
        _names(option, names, lambda n: _binding(option, n, "NAME1,NAME2=VAR"))
    _identifier(option, var.strip(), "the notebook variable holding the configs")
    return raw


def read_option(flag: str, raw: str, name: str | None = None) -> object:
    """Read ``raw`` as option ``flag``'s value, as the parser does.

    nsight-python's API (:mod:`nsight_lab.api`) checks its arguments with the same
    readers; ``name`` is what the error calls the value (the flag by default).

    Raises:
        OptionError: ``raw`` is not accepted (one line naming ``name``).
    """
    option = _BY_FLAG[flag]
    said = name or flag
    text = _check_text(said, raw)
    if option.choices is not None:
        return _choice(said, text, option.choices())
    assert option.read is not None  # noqa: S101  (declared with a reader)
    return option.read(said, text)


def backend_choices() -> tuple[str, ...]:
    """The ``--backend`` values: ``auto``, then every id of the backend registry.

    Read from :func:`nsight_lab.backends.backend_choices` when asked (not at import:
    the registry may import more than the parser needs), so a backend added to the
    registry is accepted, listed in the help and in the README with no change here.
    """
    from nsight_lab.backends import backend_choices as registry_choices

    return registry_choices()


def _literal(alias: object) -> Callable[[], tuple[str, ...]]:
    """The choices of a ``Literal[...]`` alias, as :attr:`Option.choices` wants them."""
    values = tuple(str(value) for value in get_args(alias))
    return lambda: values


@dataclass(frozen=True)
class Option:
    """One ``%%nsight`` option, declared once: the parser, help and README read it.

    Its default is that of the :class:`ProfileOptions` field it sets, shown in the help
    and the README when it is a number or a word.
    """

    flag: str
    """``--name`` as the user types it."""
    metavar: str
    """What the value looks like (``N``, ``V1,V2,...``); empty for a switch."""
    field: str
    """The :class:`ProfileOptions` field it sets (``params`` for the grid options)."""
    help: str
    """One short line for ``%nsight help`` (choices and default are added)."""
    meaning: str
    """The README's fuller text, Markdown (choices in the syntax, default added)."""
    read: Callable[[str, str], object] | None = None
    """``read(flag, raw)`` -> the field's value; raises a one-line OptionError.

    ``None`` for a switch (sets ``True``) and for an option with :attr:`choices`.
    """
    choices: Callable[[], tuple[str, ...]] | None = None
    """The accepted words, asked for when needed (the backend registry may grow)."""
    repeatable: bool = False
    """May be given more than once (each adds to the field)."""

    @property
    def takes_value(self) -> bool:
        """Whether the option needs a value (a switch does not take one)."""
        return bool(self.metavar)

    def parse(self, raw: str) -> object:
        """Read ``raw`` (already checked for unsafe characters) into the field's value.

        Raises:
            OptionError: ``raw`` is not accepted; one line naming :attr:`flag`.
        """
        if self.choices is not None:
            return _choice(self.flag, raw, self.choices())
        assert self.read is not None  # noqa: S101  (declared with a reader)
        return self.read(self.flag, raw)

    def default(self) -> str | None:
        """The field's default as shown to the user, or ``None`` when not shown."""
        value = _FIELD_DEFAULTS.get(self.field)
        if isinstance(value, bool) or not isinstance(value, int | str):
            return None
        return f"{value:,}" if isinstance(value, int) else value


_FIELD_DEFAULTS: dict[str, object] = {
    spec.name: spec.default for spec in fields(ProfileOptions)
}


OPTIONS: tuple[Option, ...] = (
    Option(
        "--configs",
        "V1,V2,...",
        "params",
        "values bound to `n`, one config each",
        "values bound to `n`, one config each (ints, floats, true/false/none, else "
        "text)",
        read=_read_configs,
    ),
    Option(
        "--configs-from",
        "VAR",
        "configs_from",
        "the configs: a list in the notebook (NAMES=VAR names tuple items)",
        "the configs, an explicit list in the notebook variable `VAR` (instead of "
        "`--configs`/`--param`): dicts bind their keys; tuples bind the names given "
        "as `NAMES=VAR` (`n,dtype=configs`); single values bind `n`. Values may be "
        "any objects (a `torch.dtype`); the store keeps their text",
        read=_read_configs_from,
    ),
    Option(
        "--param",
        "NAME=V1,V2,...",
        "params",
        "a named parameter (repeatable; the grid is their product)",
        "a named parameter; repeatable; the configs are the product of all "
        "parameters. Names of Python builtins (`print`, `len`), IPython's "
        "(`get_ipython`, `In`, `_`), dunders and the notebook's own functions or "
        "modules are refused",
        read=_read_param,
        repeatable=True,
    ),
    Option(
        "--runs",
        "N",
        "runs",
        "measured runs per config, the minimum with --target-rsd",
        "measured runs per config; the minimum with `--target-rsd`",
        read=_int(1),
    ),
    Option(
        "--warmup",
        "N",
        "warmup",
        "untimed runs per config first",
        "untimed runs per config before the measured ones",
        read=_int(0),
    ),
    Option(
        "--metrics",
        "M1,M2",
        "metrics",
        f"Nsight Compute metrics (beyond {TIME_METRIC}: pm or ncu backend)",
        "Nsight Compute metric names (`dram__bytes_read.sum`, ...); anything beyond "
        f"`{TIME_METRIC}` runs the `pm` backend when PM sampling takes them all "
        "in one pass, else the `ncu` backend. With `--backend ncu` and no "
        "`--metrics`, the roofline set (DRAM bytes, FP32/FP64/FP16 instruction and "
        "tensor-path op counters) is collected; with `--backend pm`, DRAM and L2 "
        "bytes, tensor-pipe activity, SM cycles active and PCIe bytes. An unknown "
        "name gets close names from `ncu --query-metrics` (ncu) or the chip's PM "
        "sampling metrics (pm)",
        read=_read_metrics,
    ),
    Option(
        "--backend",
        "B",
        "backend",
        "how regions are measured",
        "how regions are measured, as described below",
        choices=backend_choices,
    ),
    Option(
        "--cache-control",
        "C",
        "cache_control",
        "flush the L2 before each region",
        "`all` reads a buffer twice the L2 size before each region (a read-only "
        "sweep leaves the L2 clean, as Nsight Compute's flush does)",
        choices=_literal(CacheControl),
    ),
    Option(
        "--clock-control",
        "C",
        "clock_control",
        "lock the SM clock to base",
        "`base` locks the GPU clock through NVML to its base (TDP) clock, the clock "
        "`ncu --clock-control base` uses, for the session and resets it afterwards, "
        "also after errors; where not permitted the session notes say so",
        choices=_literal(ClockControl),
    ),
    Option(
        "--thermal",
        "T",
        "thermal",
        "wait for thermal headroom before runs",
        "`auto` waits before a run while the GPU is within 10 °C of its slowdown "
        "temperature, until 20 °C of headroom is back, and shows the wait; like "
        "nsight-python's it then resumes 3 °C later or sooner as the GPU heats in "
        "under 5 or over 50 runs, and at a timeout 3 °C sooner (erring at 12 °C); "
        "`manual` waits by the thresholds of `--thermal-settings` and errs at the "
        "timeout (nsight-python's `thermal_mode='manual'`)",
        choices=_literal(ThermalMode),
    ),
    Option(
        "--thermal-settings",
        "KEY=V",
        "thermal_settings",
        "wait=C,cont=C,timeout=S,device=N: pause, resume, give up, GPU",
        "nsight-python's `thermal_wait`, `thermal_cont`, `thermal_timeout` and "
        "`thermal_device`, any of them: pause when the headroom is at or below "
        "`wait` °C (10), resume at `cont` °C (20, above `wait`), time out after "
        "`timeout` s (180), watch CUDA device `device` (the profiled one)",
        read=_read_thermal_settings,
    ),
    Option(
        "--derive",
        "D1,D2",
        "derive",
        "tflops|gbps|NAME (NAME(duration_ns, *config) in the notebook)",
        "derived metrics, `tflops`, `gbps` or `NAME`: FLOP/s and bytes/s from the "
        "FLOPs and compulsory bytes PyTorch's ops in the region imply (counted in one "
        "extra untimed run per config), or a function of the notebook called as "
        "nsight-python's `derive_metric` (`NAME(duration_ns, *config)`, or the "
        "`--metrics` values first; `NAME(duration_ns, **config)` works too) returning "
        "a number, a `(number, unit)` tuple or a dict of them. A notebook function "
        "named `tflops` or `gbps` is used instead of the built-in one, with a note",
        read=_read_derive,
    ),
    Option(
        "--normalize-against",
        "A",
        "normalize_against",
        "divide every value column by region A's median, per config",
        "divide every value column (AvgValue, StdDev, Min/Max/Median, CI95 bounds) "
        "by region A's median per config and metric; `NormalizedColumns` lists them",
        read=_label("an annotation name"),
    ),
    Option(
        "--combine",
        "C",
        "combine",
        "sum|max|first|single|F: how a region's kernels combine (cupti, ncu)",
        "how several kernels of one region combine in per-kernel backends (cupti, "
        "ncu): `sum`, `max`, `first`, `single` (one kernel per region, else "
        "nsight-python's error) or the name of a function `F(x, y)` of the "
        "notebook, folded over the kernels in launch order (nsight-python's "
        "`combine_kernel_metrics`); `events` and `cpu` time the region's span",
        read=_read_combine,
    ),
    Option(
        "--ignore-kernels",
        "K1,K2",
        "ignore_kernels",
        "kernels left out of every region (cupti, ncu)",
        "kernel names left out of every region in per-kernel backends (cupti, ncu), "
        "nsight-python's `ignore_kernel_list`; commas inside `<...>`/`(...)` belong "
        "to the name",
        read=_read_ignore_kernels,
    ),
    Option(
        "--replay-mode",
        "R",
        "replay_mode",
        "each kernel of a region, or the region as one range",
        "`kernel`: a region's kernels are measured one by one and folded by "
        "`--combine`; `range`: the region is one range (cupti: from its first "
        "kernel's start to its last one's end; ncu: `--replay-mode range` replays "
        "its NVTX range), nsight-python's `replay_mode`",
        choices=_literal(ReplayMode),
    ),
    Option(
        "--sample-interval",
        "US",
        "sample_interval_us",
        "PM sampling interval in µs (pm backend)",
        "the `pm` backend's PM sampling interval in µs: each sample's counters cover "
        "this much GPU time, and each region gets a DRAM-quiet gap this long on each "
        "side so that no sample mixes it with its neighbours; the default gives a "
        "100 µs region at least 5 samples of its timeline",
        read=_int(1, MAX_SAMPLE_INTERVAL_US),
    ),
    Option(
        "--target-rsd",
        "PCT",
        "target_rsd_pct",
        "keep adding runs until the RSD is below PCT ...",
        "keep adding runs until every region's relative std dev is ≤ PCT (as "
        "nvbench) ...",
        read=_positive_float(100.0),
    ),
    Option(
        "--max-time",
        "S",
        "max_time_s",
        f"... or S seconds passed per config (default {DEFAULT_MAX_TIME_S:g} with "
        "--target-rsd)",
        "... or S seconds passed for the config (default "
        f"{DEFAULT_MAX_TIME_S:g} s with `--target-rsd`); alone, caps each config's "
        "time",
        read=_positive_float(),
    ),
    Option(
        "--output-csv",
        "PREFIX",
        "output_csv",
        "also write nsight-python's raw and processed CSV files at PREFIX",
        "also write nsight-python's CSV files, `PREFIX``profiled_data-<name>-<id>.csv` "
        "(one row per run, region and metric) and `PREFIX``processed_data-<name>-"
        "<id>.csv` (the results DataFrame); `<name>` is `--name` or `cell`, `<id>` "
        "the session",
        read=_label("a shorter prefix"),
    ),
    Option(
        "--name",
        "LABEL",
        "name",
        "a label for the session in the history",
        "a label for the session in the history",
        read=_label("a shorter label"),
    ),
    Option(
        "--out",
        "VAR",
        "out",
        "also store the results DataFrame in VAR",
        "also put the results DataFrame in the variable VAR (the same names as "
        "`--param` are refused)",
        read=_read_out,
    ),
    Option(
        "--max-configs",
        "N",
        "max_configs",
        f"allow a grid of up to N configs (default {DEFAULT_MAX_CONFIGS:,})",
        f"allow a grid of up to N configs (default {DEFAULT_MAX_CONFIGS:,}; at most "
        f"{MAX_CONFIGS:,}): a larger grid is refused before it is laid out",
        read=_int(1, MAX_CONFIGS),
    ),
    Option(
        "--ranks",
        "N",
        "ranks",
        "run the cell in N torch.distributed ranks (cpu, events)",
        "run the cell in N ranks started by `torch.multiprocessing` with a process "
        "group (NCCL, one GPU each, on the events backend; gloo on the cpu backend); "
        "each region gets one duration per rank, its span (first start to last end) "
        "and the straggler rank, and per-GPU telemetry; the cell's free variables "
        "are shipped with cloudpickle",
        read=_int(1, MAX_RANKS),
    ),
    Option(
        "--baseline",
        "NAME",
        "baseline",
        "judge the session against a baseline (%nsight baseline set NAME)",
        "judge the session against the baseline `NAME` (set with `%nsight baseline "
        "set NAME [ID]`): after the summary, per region, metric and config the ratio "
        "of medians with its 95 % interval and a verdict (faster, slower, no change "
        "within noise), flagged where the SM clocks differ by more than 2 % or runs "
        "were throttled; the history marks a session slower than its baseline. An "
        "unknown name is refused before anything runs",
        read=_read_baseline,
    ),
    Option(
        "--isolate",
        "",
        "isolate",
        "run the cell in a child process (ncu backend)",
        "run the cell in a child Python under the installed `ncu` (the ncu "
        "backend's isolated path; the cell's free variables are shipped with "
        "cloudpickle, CUDA tensors re-created on the GPU)",
    ),
    Option(
        "--quiet",
        "",
        "quiet",
        "no progress display and no table output",
        "no live progress and no table output (use with `--out`)",
    ),
)
"""Every ``%%nsight`` option, in the order the help and the README list them."""

_BY_FLAG: dict[str, Option] = {option.flag: option for option in OPTIONS}
KNOWN_OPTIONS: tuple[str, ...] = tuple(_BY_FLAG)
"""The option flags, in :data:`OPTIONS` order (unknown ones get the closest)."""

_HELP_COLUMN = 24
"""Width of the syntax column of :func:`help_text`."""


def help_text() -> str:
    """The ``%%nsight --help`` text: one line per option of :data:`OPTIONS`.

    Each line is the flag and its value's syntax, then the choices, the help and the
    default (``%nsight help`` adds the line magic's commands after it).
    """
    usage = "%%nsight [options]".ljust(_HELP_COLUMN + 2)
    lines = [f"{usage}profile the annotated regions of this cell"]
    for option in OPTIONS:
        syntax = f"{option.flag} {option.metavar}".rstrip()
        text = option.help
        if option.choices is not None:
            text = f"{'|'.join(option.choices())}: {text}"
        default = option.default()
        if default is not None:
            text = f"{text} (default {default})"
        lines.append(f"  {syntax.ljust(_HELP_COLUMN)} {text}")
    return "\n".join(lines)


def _markdown_row(cells: tuple[str, str], widths: tuple[int, int]) -> str:
    return (
        "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
    )


def options_markdown() -> str:
    r"""The README's options table (Markdown, padded as prettier formats it).

    One row per option of :data:`OPTIONS`: the syntax (choices joined by ``\|``)
    and the meaning, with the default added where :meth:`Option.default` shows one.
    """
    rows: list[tuple[str, str]] = []
    for option in OPTIONS:
        value = (
            "\\|".join(option.choices())
            if option.choices is not None
            else option.metavar
        )
        syntax = f"`{option.flag} {value}`" if value else f"`{option.flag}`"
        meaning = option.meaning
        default = option.default()
        if default is not None:
            word = isinstance(_FIELD_DEFAULTS[option.field], str)
            shown_default = f"`{default}`" if word else default
            meaning = f"{meaning} (default {shown_default})"
        rows.append((syntax, meaning))
    header = ("option", "meaning")
    widths = (
        max(len(header[0]), *(len(r[0]) for r in rows)),
        max(len(header[1]), *(len(r[1]) for r in rows)),
    )
    rule = ("-" * widths[0], "-" * widths[1])
    return "\n".join(_markdown_row(r, widths) for r in (header, rule, *rows))


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
    """Split the line into (option, value) pairs; values may follow ``=`` or a space.

    A switch's value is ``None``. Unknown options, a switch given a value, a missing
    value and unsafe characters in a value are refused here, before any value is read.
    """
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
        option = _BY_FLAG.get(name)
        if option is None:
            close = difflib.get_close_matches(name[:40], KNOWN_OPTIONS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            msg = f"unknown option {shown(name)}; {hint}see %nsight --help for options"
            raise OptionError(msg)
        if not option.takes_value:
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


def parse_options(line: str) -> ProfileOptions:
    """Parse a ``%%nsight`` option line, as :data:`OPTIONS` declares the options.

    Args:
        line: The text after ``%%nsight`` on the cell's first line.

    Returns:
        The validated options; ``--configs`` binds ``n`` as the first parameter.

    Raises:
        OptionError: An option is unknown, repeated, missing its value or malformed,
            or the grid is too large; the message is one line naming it.
    """
    seen: set[str] = set()
    params: list[tuple[str, tuple[JsonScalar, ...]]] = []
    kw: dict[str, object] = {}
    for name, raw in _tokens(line):
        option = _BY_FLAG[name]
        if name in seen and not option.repeatable:
            msg = f"{name} was given twice; give it once"
            raise OptionError(msg)
        seen.add(name)
        value = True if raw is None else option.parse(raw)
        if option.field != "params":
            kw[option.field] = value
        elif name == "--configs":
            params.insert(0, value)  # type: ignore[arg-type]
        else:
            params.append(value)  # type: ignore[arg-type]
    names = [p for p, _ in params]
    dup = next((p for p in names if names.count(p) > 1), None)
    if dup is not None:
        how = "--configs binds 'n'; " if dup == "n" and "--configs" in seen else ""
        msg = f"--param: parameter {dup!r} is given twice; {how}give each name once"
        raise OptionError(msg)
    if "--configs-from" in seen and params:
        other = "--configs" if "--configs" in seen else "--param"
        msg = (
            f"--configs-from gives the configs itself; drop {other} (or list every "
            "config in the variable)"
        )
        raise OptionError(msg)
    if "--thermal-settings" in seen and kw.get("thermal") == "off":
        msg = "--thermal-settings has no effect with --thermal off; drop one of the two"
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


def main(argv: list[str] | None = None) -> int:
    """``python -m nsight_lab.options [--markdown]``: print the help or README table."""
    args = sys.argv[1:] if argv is None else argv
    print(options_markdown() if args == ["--markdown"] else help_text())  # noqa: T201
    return 0 if args in ([], ["--markdown"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main())
