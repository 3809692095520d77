from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.errors import OptionError
from nsight_lab.options import KNOWN_OPTIONS, ProfileOptions, parse_options, parse_value


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
        ("--combine 2max", "--combine"),
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


def _grid(params: int, values: int) -> str:
    vals = ",".join(str(v) for v in range(values))
    return " ".join(f"--param p{i}={vals}" for i in range(params))


def test_a_huge_grid_is_refused_before_it_is_laid_out() -> None:
    with pytest.raises(OptionError) as info:
        parse_options(_grid(12, 100))  # 10^24 configs
    message = str(info.value)
    assert "10^24" in message
    assert "(12 parameters)" in message
    assert "--max-configs" in message
    with pytest.raises(OptionError, match=r"10,001 configs \(1 parameter\),"):
        parse_options("--configs " + ",".join(str(v) for v in range(10_001)))


def test_max_configs_sets_the_grid_limit() -> None:
    line = "--configs 1,2,3 --param m=" + ",".join(str(v) for v in range(3000))
    opts = parse_options(line + " --max-configs 10000")
    assert opts.max_configs == 10_000
    assert opts.grid_size() == 9_000
    assert len(opts.configs()) == 9_000
    with pytest.raises(OptionError, match="above --max-configs 10"):
        parse_options("--configs 1,2,3,4 --param m=1,2,3 --max-configs 10")
    with pytest.raises(OptionError, match="--max-configs"):
        parse_options("--max-configs 10000001")
    # Above the measured maximum (issue 29): one line naming it.
    with pytest.raises(
        OptionError, match=r"at most 10,000 \(--max-configs's maximum, the largest grid"
    ):
        parse_options(line + " --param k=1,2")


@pytest.mark.parametrize("digits", [30, 4301, 60_000])
def test_huge_numbers_are_refused_with_a_short_message(digits: int) -> None:
    for option in ("--runs", "--warmup", "--max-configs", "--configs"):
        with pytest.raises(OptionError) as info:
            parse_options(f"{option} {'9' * digits}")
        message = str(info.value)
        assert option in message
        assert len(message) <= 200, message


def test_long_values_are_echoed_truncated() -> None:
    for line in (
        "--backend " + "x" * 10_000,
        "--runs " + "x" * 10_000,
        "--out " + "x" * 10_000,
        "--name " + "x" * 10_000,
        "--" + "x" * 10_000,
        "'" + "x" * 10_000,
        "--configs 1 " + "x" * 100_000,
    ):
        with pytest.raises(OptionError) as info:
            parse_options(line)
        assert len(str(info.value)) <= 200, str(info.value)


@pytest.mark.parametrize(
    "line",
    [
        "--param __builtins__=1",
        "--param print=1",
        "--param len=1,2",
        "--param get_ipython=1",
        "--param In=1",
        "--param Out=1",
        "--param exit=1",
        "--param quit=1",
        "--param _=1",
        "--param __=1",
        "--param _i2=1",
        "--param _7=1",
        "--param __name__=1",
        "--out get_ipython",
        "--out print",
        "--out __builtins__",
        "--out _",
    ],
)
def test_names_that_shadow_builtins_or_ipython_are_refused(line: str) -> None:
    with pytest.raises(OptionError) as info:
        parse_options(line)
    message = str(info.value)
    assert message.startswith(line.split(maxsplit=1)[0])
    assert "choose another name" in message


def test_n_and_plain_names_still_bind() -> None:
    assert parse_options("--param n=1,2").param_names == ("n",)
    assert parse_options("--configs 1 --param x_=2 --out res").out == "res"


def test_bindings_may_not_replace_the_notebooks_callables() -> None:
    import math as a_module

    from nsight_lab.options import check_bindings

    def my_function() -> None:
        pass

    namespace = {"f": my_function, "m": a_module, "plain": 3, "n": 5}
    check_bindings(parse_options("--param plain=1 --configs 1 --out res"), namespace)
    for line, option in (
        ("--param f=1", "--param f"),
        ("--out f", "--out"),
        ("--param m=1", "--param m"),
    ):
        with pytest.raises(OptionError, match=option):
            check_bindings(parse_options(line), namespace)
    with pytest.raises(OptionError, match="--configs"):
        check_bindings(parse_options("--configs 1"), {"n": my_function})


@pytest.mark.parametrize(
    "line",
    [
        "--name '\ud800'",
        "--name \udfff",
        "--configs 1,\ud800",
        "--param x=a\udc80",
        "--name 'a\x00b'",
        "--name '\x1b[31mred'",
        "--configs '1,\x07'",
        "--normalize-against 'a\x9bb'",
        "--name 'left\u202eright'",
        "--name 'a\tb'",
        "--metrics \ud800",
        "--backend \x1b",
    ],
)
def test_control_characters_and_lone_surrogates_are_refused(line: str) -> None:
    with pytest.raises(OptionError) as info:
        parse_options(line)
    message = str(info.value)
    assert message.startswith(line.split(maxsplit=1)[0])
    assert message.isprintable()
    message.encode("utf-8")  # no lone surrogate left in the message itself


def test_every_field_is_set_by_exactly_one_declared_option() -> None:
    from dataclasses import fields

    from nsight_lab.options import OPTIONS

    set_by: dict[str, list[str]] = {}
    for option in OPTIONS:
        set_by.setdefault(option.field, []).append(option.flag)
    names = {
        spec.name for spec in fields(ProfileOptions) if not spec.metadata.get("runtime")
    } - {"given"}
    assert set(set_by) == names
    assert set_by.pop("params") == ["--configs", "--param"]
    assert all(len(flags) == 1 for flags in set_by.values()), set_by
    assert tuple(option.flag for option in OPTIONS) == KNOWN_OPTIONS


def test_to_json_holds_every_field_but_given() -> None:
    import json
    from dataclasses import fields

    opts = parse_options("--configs 1,2 --param m=a --metrics a.b --derive tflops")
    data = opts.to_json()
    assert list(data) == [
        s.name
        for s in fields(ProfileOptions)
        if s.name != "given" and not s.metadata.get("runtime")
    ]
    assert data["params"] == {"n": [1, 2], "m": ["a"]}
    assert data["metrics"] == [TIME_METRIC, "a.b"]
    assert data["derive"] == ["tflops"]
    assert json.loads(json.dumps(data)) == data


def test_help_is_generated_from_the_declaration() -> None:
    from nsight_lab.contract.registry import backend_choices
    from nsight_lab.magic import usage
    from nsight_lab.options import OPTIONS, help_text

    text = help_text()
    lines = text.splitlines()
    assert len(lines) == 1 + len(OPTIONS)
    for option, line in zip(OPTIONS, lines[1:], strict=True):
        assert line.split()[0] == option.flag
        assert option.help in line
    assert "|".join(backend_choices()) in text
    assert "--runs N                 " in text
    assert "(default 10)" in text  # ProfileOptions.runs
    assert "(default all)" in text  # ProfileOptions.cache_control
    # Then the line magic's commands, from the commands' one parser (the CLI's).
    assert usage().startswith(text + "\nusage: %nsight [-h] COMMAND ...")
    for command in ("doctor", "history", "show", "baseline", "compare", "peaks"):
        assert f"\n    {command} " in usage()


def test_backend_choices_are_the_registrys() -> None:
    from nsight_lab.contract.registry import backend_choices

    assert parse_options("--backend auto").backend == "auto"
    for backend in backend_choices():
        assert parse_options(f"--backend {backend}").backend == backend
    with pytest.raises(OptionError, match="expected one of 'auto', 'cpu'"):
        parse_options("--backend gpu")


def test_module_prints_the_readme_table(capsys: pytest.CaptureFixture[str]) -> None:
    from nsight_lab.options import help_text, options_markdown
    from nsight_lab.options.__main__ import main

    assert main(["--markdown"]) == 0
    assert capsys.readouterr().out == options_markdown() + "\n"
    assert main([]) == 0
    assert capsys.readouterr().out == help_text() + "\n"
    assert main(["--bogus"]) == 2
