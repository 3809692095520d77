"""Nsight Compute metric names nsight-lab derives FLOPs and DRAM bytes from.

Names were checked against ``ncu --query-metrics --chip gh100`` (Nsight Compute
2025.3.1). FLOPs follow Nsight Compute's own roofline: one per add or multiply thread
instruction, two per fused multiply-add, plus the tensor-path math-op counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
DURATION = "gpu__time_duration.sum"

FLOP_WEIGHTS: dict[str, float] = {
    # FP32
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 2.0,
    # FP64
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum": 2.0,
    # FP16 (scalar/half2 thread instructions)
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum": 2.0,
    # Tensor cores: math ops by source type
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum": 1.0,
    "sm__ops_path_tensor_src_fp16.sum": 1.0,
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum": 1.0,
    "sm__ops_path_tensor_src_fp64.sum": 1.0,
    "sm__ops_path_tensor_src_fp8.sum": 1.0,
}
"""Metric -> FLOPs per counted unit."""

BYTE_METRICS = (DRAM_READ, DRAM_WRITE)
ROOFLINE_METRICS: tuple[str, ...] = (DURATION, *BYTE_METRICS, *FLOP_WEIGHTS)
"""Everything the roofline and traffic views need from one ncu collection."""


def measured_flops(metrics: Mapping[str, float]) -> float | None:
    """FLOPs from counter values, or None when no FLOP counter was collected."""
    present = [name for name in FLOP_WEIGHTS if name in metrics]
    if not present:
        return None
    return sum(FLOP_WEIGHTS[name] * metrics[name] for name in present)


def measured_bytes(metrics: Mapping[str, float]) -> tuple[float, float] | None:
    """(DRAM bytes read, written) from counter values, or None if not collected."""
    if DRAM_READ not in metrics or DRAM_WRITE not in metrics:
        return None
    return metrics[DRAM_READ], metrics[DRAM_WRITE]


FLOP_DTYPES: dict[str, str] = {
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": "fp32",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": "fp32",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "fp32",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum": "fp64",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum": "fp64",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum": "fp64",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum": "fp16",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum": "fp16",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum": "fp16",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum": "bf16",
    "sm__ops_path_tensor_src_fp16.sum": "fp16",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum": "tf32",
    "sm__ops_path_tensor_src_fp64.sum": "fp64_tensor",
    "sm__ops_path_tensor_src_fp8.sum": "fp8",
}
"""Roofline dtype class of the FLOPs each counter counts."""


def measured_dtype(metrics: Mapping[str, float]) -> str | None:
    """The dtype class that carried most of the measured FLOPs, if any were counted."""
    shares: dict[str, float] = {}
    for name, dtype in FLOP_DTYPES.items():
        if name in metrics:
            shares[dtype] = shares.get(dtype, 0.0) + FLOP_WEIGHTS[name] * metrics[name]
    if not shares or max(shares.values()) <= 0:
        return None
    return max(shares, key=lambda d: shares[d])
