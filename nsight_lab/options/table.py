"""The one declaration of the ``%%nsight`` options: :data:`OPTIONS`.

Each :class:`Option` gives its flag, value syntax, reader (from
:mod:`~nsight_lab.options.values`) or choices, the field it sets and its help and
README texts; its default is its :class:`~nsight_lab.options.profile.ProfileOptions`
field's. The parser, ``%nsight help``, the README table and nsight-python's argument
checks (:func:`read_option`) all read it.
"""

from __future__ import annotations

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.options.kernel_names import read_ignore_kernels
from nsight_lab.options.option import (
    Option,
    backend_choices,
    literal_choices,
)
from nsight_lab.options.profile import (
    DEFAULT_MAX_CONFIGS,
    DEFAULT_MAX_TIME_S,
    MAX_CONFIGS,
    MAX_SAMPLE_INTERVAL_US,
    CacheControl,
    ClockControl,
    ReplayMode,
    ThermalMode,
)
from nsight_lab.options.settings import read_baseline, read_thermal_settings
from nsight_lab.options.values import (
    MAX_RANKS,
    check_text,
    choice,
    int_value,
    label_value,
    positive_float,
    read_combine,
    read_configs,
    read_configs_from,
    read_derive,
    read_metrics,
    read_out,
    read_param,
)


def read_option(flag: str, raw: str, name: str | None = None) -> object:
    """Read ``raw`` as option ``flag``'s value, as the parser does.

    nsight-python's API (:mod:`nsight_lab.api`) checks its arguments with the same
    readers; ``name`` is what the error calls the value (the flag by default).

    Raises:
        OptionError: ``raw`` is not accepted (one line naming ``name``).
    """
    option = BY_FLAG[flag]
    said = name or flag
    text = check_text(said, raw)
    if option.choices is not None:
        return choice(said, text, option.choices())
    assert option.read is not None  # noqa: S101  (declared with a reader)
    return option.read(said, text)


OPTIONS: tuple[Option, ...] = (
    Option(
        "--configs",
        "V1,V2,...",
        "params",
        "values bound to `n`, one config each",
        "values bound to `n`, one config each (ints, floats, true/false/none, else "
        "text)",
        read=read_configs,
    ),
    Option(
        "--configs-from",
        "VAR",
        "configs_from",
        "the configs: a list in the notebook (NAMES=VAR names tuple items)",
        "the configs, an explicit list in the notebook variable `VAR` (instead of "
        "`--configs`/`--param`): dicts bind their keys; tuples bind the names given "
        "as `NAMES=VAR` (`n,dtype=configs`, each name once); single values bind `n`. "
        "Values may be any objects (a `torch.dtype`); the store keeps their text. At "
        "most `--max-configs` items are read, one at a time (a sized variable is "
        "judged by its length first): a longer or endless one is refused in one line",
        read=read_configs_from,
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
        read=read_param,
        repeatable=True,
    ),
    Option(
        "--runs",
        "N",
        "runs",
        "measured runs per config, the minimum with --target-rsd",
        "measured runs per config; the minimum with `--target-rsd`",
        read=int_value(1),
    ),
    Option(
        "--warmup",
        "N",
        "warmup",
        "untimed runs per config first",
        "untimed runs per config before the measured ones",
        read=int_value(0),
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
        read=read_metrics,
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
        choices=literal_choices(CacheControl),
    ),
    Option(
        "--clock-control",
        "C",
        "clock_control",
        "lock the SM clock to base",
        "`base` locks the GPU clock through NVML to its base (TDP) clock, the clock "
        "`ncu --clock-control base` uses, for the session and resets it afterwards, "
        "also after errors; where not permitted the session notes say so",
        choices=literal_choices(ClockControl),
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
        choices=literal_choices(ThermalMode),
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
        read=read_thermal_settings,
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
        read=read_derive,
    ),
    Option(
        "--normalize-against",
        "A",
        "normalize_against",
        "divide AvgValue by region A's, per config",
        "divide AvgValue by region A's per config and metric (nsight-python's "
        "`NormalizationValue`), and MedianValue by A's median "
        "(`MedianNormalizationValue`); the other columns stay as measured",
        read=label_value("an annotation name"),
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
        read=read_combine,
    ),
    Option(
        "--ignore-kernels",
        "K1,K2",
        "ignore_kernels",
        "kernels left out of every region (cupti, ncu)",
        "kernel names left out of every region in per-kernel backends (cupti, ncu), "
        "nsight-python's `ignore_kernel_list`; commas inside `<...>`/`(...)` belong "
        "to the name",
        read=read_ignore_kernels,
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
        choices=literal_choices(ReplayMode),
    ),
    Option(
        "--sample-interval",
        "US",
        "sample_interval_us",
        "shortest PM sampling interval in µs (pm backend)",
        "the `pm` backend's PM sampling interval in µs: each sample's counters cover "
        "this much GPU time, and each region gets DRAM-quiet gaps this long so that "
        "no sample mixes it with its neighbours. Given, it is kept unless a run of "
        "the cell is too long for it (then a longer one, said in the notes); not "
        "given, the interval is chosen from the warm-up run and the decode cost "
        "measured at open, balancing decoding against the quiet gaps, never below "
        "the default",
        read=int_value(1, MAX_SAMPLE_INTERVAL_US),
    ),
    Option(
        "--target-rsd",
        "PCT",
        "target_rsd_pct",
        "keep adding runs until the RSD is below PCT ...",
        "keep adding runs until every region's relative std dev is ≤ PCT (as "
        "nvbench) ...",
        read=positive_float(100.0),
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
        read=positive_float(),
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
        read=label_value("a shorter prefix"),
    ),
    Option(
        "--name",
        "LABEL",
        "name",
        "a label for the session in the history",
        "a label for the session in the history",
        read=label_value("a shorter label"),
    ),
    Option(
        "--out",
        "VAR",
        "out",
        "also store the results DataFrame in VAR",
        "also put the results DataFrame in the variable VAR (the same names as "
        "`--param` are refused)",
        read=read_out,
    ),
    Option(
        "--max-configs",
        "N",
        "max_configs",
        f"allow a grid of up to N configs (default {DEFAULT_MAX_CONFIGS:,})",
        f"allow a grid of up to N configs (default {DEFAULT_MAX_CONFIGS:,}; at most "
        f"{MAX_CONFIGS:,}): a larger grid is refused before it is laid out",
        read=int_value(1, MAX_CONFIGS),
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
        read=int_value(1, MAX_RANKS),
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
        read=read_baseline,
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

BY_FLAG: dict[str, Option] = {option.flag: option for option in OPTIONS}
KNOWN_OPTIONS: tuple[str, ...] = tuple(BY_FLAG)
"""The option flags, in :data:`OPTIONS` order (unknown ones get the closest)."""
