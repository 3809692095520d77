"""Issue 30, no silent zeros: TFLOP/s the work model could not count is undefined."""

from __future__ import annotations

import math

from nsight_lab.contract.records import RunRecord
from nsight_lab.results.derive import DeriveSpec, derived_values
from nsight_lab.roofline.workmodel import UNMODELLED_PREFIX


def record(metrics: dict[str, float]) -> RunRecord:
    return RunRecord(
        session_id=1,
        config_index=0,
        config={},
        run_index=0,
        annotation="layer",
        duration_ns=1e6,
        backend="cpu",
        metrics=metrics,
    )


SPEC = DeriveSpec(names=("tflops",))


def test_zero_flops_from_an_op_without_a_formula_is_undefined_not_zero() -> None:
    # Given: the work model met aten._transformer_encoder_layer_fwd and counted 0
    unmodelled = record(
        {
            "model__flops": 0.0,
            f"{UNMODELLED_PREFIX}aten._transformer_encoder_layer_fwd": 1,
        }
    )
    value, unit = derived_values(unmodelled, SPEC)["tflops"]
    assert math.isnan(value)
    assert unit == "TFLOP/s"


def test_zero_flops_of_modelled_work_stays_zero_and_counted_flops_divide() -> None:
    copy = record({"model__flops": 0.0})  # a copy: no FLOPs, rightly
    assert derived_values(copy, SPEC)["tflops"][0] == 0.0
    matmul = record({"model__flops": 2e9, f"{UNMODELLED_PREFIX}aten.foo": 1})
    assert derived_values(matmul, SPEC)["tflops"][0] == 2.0  # 2e9 / 1 ms = 2 TFLOP/s
