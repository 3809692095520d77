"""Issue 30, the CPU quickstart as a new user reads it: each thing said once, first.

What ``ui-tests/tests/quickstart.spec.ts`` found in the recorded quickstart's views,
held here without a browser:

- a cpu session has no roofs until ``%nsight peaks --cpu``, yet its table shows
  TFLOP/s from the work model: where that model counts none (a transformer layer's
  ``aten._transformer_encoder_layer_fwd``) the cell reads an en dash and the note
  names the op (it said nothing without a placement);
- a table's Flag cell names the flag's kind in words (``runs too spread to use``),
  the list above it says the flag's sentence once, and flags with one cause and
  action (five regions spread on a busy host) say that cause and action once;
- the lab's final output gets the headline and the checks in its bundle, so it can
  say them first (it showed neither: only the static page did).
"""

from __future__ import annotations

from nsight_lab.analysis.validity import (
    FLAG_WORDS,
    Flag,
    Validity,
    check_region,
    checks_json,
    checks_lines,
    flag_words_of,
)
from nsight_lab.contract.records import RunRecord
from nsight_lab.views.answer import headline
from nsight_lab.views.bundle import session_json

ENCODER_OP = "aten._transformer_encoder_layer_fwd"


def _runs(
    name: str, durations: list[float], metrics: dict[str, float]
) -> list[RunRecord]:
    return [
        RunRecord(
            session_id=1,
            config_index=0,
            config={"n": 64},
            run_index=i,
            annotation=name,
            duration_ns=d,
            backend="cpu",
            metrics=dict(metrics),
        )
        for i, d in enumerate(durations)
    ]


def test_an_unplaced_cpu_region_names_the_op_the_work_model_does_not_count() -> None:
    runs = _runs(
        "encoder",
        [8.9e6, 9.1e6, 9.0e6],
        {
            "model__flops": 0.0,
            "model__bytes_read": 5.8e6,
            "model__bytes_written": 5.2e5,
            f"model__unmodelled__{ENCODER_OP}": 1.0,
        },
    )
    v = check_region(runs)  # no placement: the cpu backend before peaks
    assert ENCODER_OP in v.unmodelled
    assert v.unmodelled.startswith("TFLOP/s not shown")
    lines = checks_lines(checks_json([v], with_config=True))
    assert lines == [f"note encoder (n=64): {v.unmodelled}"]
    # A region the model counts says nothing.
    counted = _runs("matmul", [4e5, 4.1e5], {"model__flops": 2 * 64**3})
    assert check_region(counted).unmodelled == ""


def _flag(kind: str, text: str) -> Flag:
    return Flag(kind, text, "the host was busy", "rerun on an idle machine")  # type: ignore[arg-type]


def test_the_flag_cell_names_kinds_and_the_frame_texts_read_the_same() -> None:
    texts = {
        "over_roof": "68934 % of roof cannot be true",
        "over_span": "kernel time 2.05x its GPU span on one stream (3 of 10 runs)",
        "low_coverage": "its kernels cover 0.03 % of its 8.000 ms on the host",
        "unsteady": "runs spread 122 % (RSD): the median is not usable",
        "throttled": "throttled (30 of 30 runs)",
    }
    assert set(texts) == set(FLAG_WORDS)
    flags = tuple(_flag(kind, text) for kind, text in texts.items())
    v = Validity(annotation="r", config_index=0, flags=flags)
    assert v.flag_words == "; ".join(FLAG_WORDS.values())
    # The frame keeps the sentences; a table made from it names the same kinds.
    assert flag_words_of(v.flag_text) == v.flag_words
    assert flag_words_of("") == ""


def test_flags_with_one_action_say_each_cause_and_the_action_once() -> None:
    checks = [
        {"region": region, "config": "n=64", "kind": "unsteady", "text": text}
        | {"cause": "the host was busy", "action": "rerun on an idle machine"}
        for region, text in (
            ("load", "runs spread 131 % (RSD): the median is not usable"),
            ("matmul", "runs spread 57 % (RSD): the median is not usable"),
        )
    ]
    lines = checks_lines(checks)
    assert lines == [
        "! load (n=64): runs spread 131 % (RSD): the median is not usable",
        "! matmul (n=64): runs spread 57 % (RSD): the median is not usable",
        "  cause: the host was busy",
        "  do: rerun on an idle machine",
    ]
    # Another cause, the same action: its lines and its cause, the action once.
    other = {**checks[0], "config": "n=128", "cause": "a few runs far from the rest"}
    assert checks_lines([*checks, other])[2:] == [
        "  cause: the host was busy",
        "! load (n=128): runs spread 131 % (RSD): the median is not usable",
        "  cause: a few runs far from the rest",
        "  do: rerun on an idle machine",
    ]


def test_the_lab_bundle_carries_the_headline_and_the_checks() -> None:
    checks = [
        {
            "region": "add",
            "config": "n=512",
            "kind": "unsteady",
            "text": "runs spread 85 % (RSD): the median is not usable",
            "cause": "the host was busy",
            "action": "rerun on an idle machine",
        }
    ]
    data = session_json(
        session_id=1,
        status="completed",
        progress={},
        message="",
        figures={},
        summary=[],
        checks=checks,
    )
    assert data["checks"] == checks
    assert data["headline"] == headline(checks)
    assert data["headline"].startswith("! 1 region flagged: runs too spread to use")
    quiet = session_json(
        session_id=1,
        status="completed",
        progress={},
        message="",
        figures={},
        summary=[],
    )
    assert (quiet["headline"], quiet["checks"]) == ("", [])
