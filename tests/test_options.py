from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsight_lab.errors import OptionError
from nsight_lab.options import KNOWN_OPTIONS, ProfileOptions, parse_options, parse_value
from nsight_lab.records import TIME_METRIC


def test_defaults() -> None:
    opts = parse_options("")
    assert opts == ProfileOptions()
    assert opts.configs() == [{}]
    assert opts.metrics == (TIME_METRIC,)


def test_every_option_parses() -> None:
    opts = parse_options(
        "--configs 512,1024 --param dtype=fp16,bf16 --runs 7 --warmup=0 "
        "--metrics dram__bytes_read.sum,dram__bytes_write.sum --backend cpu "
        "--cache-control none --clock-control base --thermal off "
        "--derive tflops,gbps,myfn "
        "--normalize-against ref --combine max --target-rsd 0.5 --max-time 3 "
        "--name 'my run' --out df --isolate --quiet"
    )
    assert opts.params == (("n", (512, 1024)), ("dtype", ("fp16", "bf16")))
    assert opts.configs() == [
        {"n": 512, "dtype": "fp16"},
        {"n": 512, "dtype": "bf16"},
        {"n": 1024, "dtype": "fp16"},
        {"n": 1024, "dtype": "bf16"},
    ]
    assert opts.runs == 7
    assert opts.warmup == 0
    assert opts.metrics == (
        TIME_METRIC,
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
    )
    assert opts.extra_metrics == ("dram__bytes_read.sum", "dram__bytes_write.sum")
    assert opts.backend == "cpu"
    assert opts.cache_control == "none"
    assert opts.clock_control == "base"
    assert opts.thermal == "off"
    assert opts.derive == ("tflops", "gbps", "myfn")
    assert opts.normalize_against == "ref"
    assert opts.combine == "max"
    assert opts.target_rsd_pct == 0.5
    assert opts.max_time_s == 3.0
    assert opts.name == "my run"
    assert opts.out == "df"
    assert opts.isolate
    assert opts.quiet


def test_configs_bind_n_first_and_values_are_typed() -> None:
    opts = parse_options("--param m=1.5,x,true --configs 8")
    assert opts.param_names == ("n", "m")
    assert [v for _, v in opts.params] == [(8,), (1.5, "x", True)]
    assert parse_value("0x10") == 16
    assert parse_value("007") == 7
    assert parse_value("none") is None
    assert parse_value("inf") == "inf"


def test_target_rsd_defaults_max_time() -> None:
    assert parse_options("--target-rsd 1").max_time_s == 10.0
    assert parse_options("--max-time 2").target_rsd_pct is None


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("--runs 0", "--runs"),
        ("--runs -3", "--runs"),
        ("--runs abc", "--runs"),
        ("--warmup -1", "--warmup"),
        ("--runs", "--runs"),
        ("--runs 1 --runs 2", "--runs"),
        ("--configs 1,,2", "--configs"),
        ("--configs 1,1", "--configs"),
        ("--param n", "--param"),
        ("--param 1x=2", "--param"),
        ("--param class=1", "--param"),
        ("--configs 1 --param n=2", "--param"),
        ("--param a=1 --param a=2", "--param"),
        ("--metrics 'bad metric'", "--metrics"),
        ("--metrics a,,b", "--metrics"),
        ("--backend cuda_events", "--backend"),
        ("--cache-control some", "--cache-control"),
        ("--clock-control boost", "--clock-control"),
        ("--thermal on", "--thermal"),
        ("--combine mean", "--combine"),
        ("--derive 9x", "--derive"),
        ("--target-rsd 0", "--target-rsd"),
        ("--target-rsd 100", "--target-rsd"),
        ("--target-rsd nan", "--target-rsd"),
        ("--max-time -1", "--max-time"),
        ("--out 'not a name'", "--out"),
        ("--out for", "--out"),
        ("--quiet=yes", "--quiet"),
        ("--frobnicate 3", "--frobnicate"),
        ("stray", "stray"),
        ("--name 'unclosed", "quote"),
    ],
)
def test_malformed_options_name_the_option(line: str, names: str) -> None:
    with pytest.raises(OptionError) as info:
        parse_options(line)
    message = str(info.value)
    assert names in message
    assert "\n" not in message


_word = st.text(
    alphabet=string.ascii_letters + string.digits + "_.,=-'\" ", max_size=12
)
_token = st.one_of(
    st.sampled_from(KNOWN_OPTIONS), st.sampled_from(["--", "-x", "--bogus"]), _word
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_token, max_size=8))
def test_random_option_strings_parse_or_fail_in_one_line(tokens: list[str]) -> None:
    line = " ".join(tokens)
    try:
        opts = parse_options(line)
    except OptionError as exc:
        message = str(exc)
        assert message
        assert "\n" not in message
        assert "Traceback" not in message
        # The message names an option, or quotes the offending token.
        assert (
            any(opt in message for opt in KNOWN_OPTIONS)
            or "'" in message
            or "quote" in message
        )
    else:
        assert opts.runs >= 1
        assert opts.warmup >= 0
        assert opts.metrics[0] == TIME_METRIC
