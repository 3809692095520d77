"""What this session cannot answer, and which backend would: findings degrade honestly.

A finding that needs a counter is never guessed from timing: where the session's
backend did not measure what a family of findings needs, one session-wide finding
says what is not answered and names the option line that would answer it. Said
last, after every finding that could be made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.finding import Finding

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.analysis.findings.facts import Context, RegionFacts

__all__ = ["coverage_findings"]

PM_DRAM = "--backend pm --metrics dram__bytes_read.sum,dram__bytes_write.sum"
CUPTI = "--backend cupti"
GPU_BACKENDS = "--backend events (GPU time), cupti (GPU idle time), pm (DRAM bytes)"


def _note(kind: str, statement: str, answered_by: str) -> Finding:
    return Finding(
        regions=(),
        kind=kind,
        family="coverage",
        statement=statement,
        action=f"profile again with {answered_by}",
        confidence="timing",
        basis="what this backend measures",
        answered_by=answered_by,
    )


def coverage_findings(facts: Sequence[RegionFacts], ctx: Context) -> list[Finding]:
    """What the session's backend leaves unanswered, one finding per gap.

    Raises:
        Nothing.
    """
    if not facts:
        return []
    out = []
    if ctx.host_timer:
        out.append(
            _note(
                "host_timer",
                "timed on the host: the GPU's kernels, idle time and DRAM bytes are "
                "not seen, so no launch, cache or GPU-bound finding is made (the "
                "CPU's own roofs come from %nsight peaks --cpu)",
                GPU_BACKENDS,
            )
        )
    else:
        if not ctx.per_kernel:
            out.append(
                _note(
                    "no_kernel_timing",
                    "no per-kernel timing: whether the GPU waits for the host "
                    "between kernels (host-bound) is not answered",
                    CUPTI,
                )
            )
        if all(f.dram_bytes is None for f in facts) and any(
            f.model_bytes for f in facts
        ):
            out.append(
                _note(
                    "no_dram_bytes",
                    "DRAM bytes are modelled, not measured: excess traffic and L2 "
                    "residency are not answered, and fusion headroom is the model's",
                    PM_DRAM,
                )
            )
    if ctx.peaks is None:
        out.append(
            _note(
                "no_roof",
                "no roof known for this device: memory-, compute- and latency-bound "
                "are not answered",
                "%nsight peaks" + (" --cpu" if ctx.host_timer else ""),
            )
        )
    if all(f.work is None for f in facts):
        out.append(
            _note(
                "no_work",
                "no FLOP or byte figures (no PyTorch ops counted, no counters): "
                "the roofline findings are not answered",
                "--warmup 1 (PyTorch's ops are counted in a warm-up) or --backend ncu",
            )
        )
    return out
