"""Which call orders give whole, timed PM samples (H200, cupti-python 13.4).

Each case enables PM sampling on the DRAM pair (or the four fixture metrics), runs
``x*2`` over 256 MB a known number of times and decodes with nsight-lab's own
:class:`~nsight_lab.backends.pm.live.CuptiImage` and
:class:`~nsight_lab.backends.pm.live.LiveDecoder`, in one of these orders:

- ``live_before``: the image made and initialised before the start, decoded by the
  thread while sampling runs (never stopped until the end);
- ``live_after``: the same, initialised again after the start;
- ``stopped_fresh``: sampling stopped after the launches, decoded into an image made
  after the stop (10,000 samples, initialised again when full);
- ``second_session``: ``live_before`` again in the same process, after a first
  session was closed (do leftovers of the first reach the second?).

Per case: samples, zero timestamps (where), DRAM bytes read over the known total,
the thread's pace. Writes ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from pathlib import Path
from typing import Any

MiB = 1 << 20
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
FOUR = (
    *DRAM,
    "lts__t_bytes.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
)


def collector(metrics: tuple[str, ...], interval_ns: int) -> Any:  # noqa: ANN401
    """An enabled, configured cupti-python collector."""
    from cupti import pm_sampling

    c = pm_sampling.Collector(0)
    c.enable()
    c.configure(
        metrics=list(metrics),
        sampling_interval=interval_ns,
        trigger_mode=pm_sampling.TriggerMode.GPU_TIME_INTERVAL,
        hardware_buffer_size=512 << 20,
    )
    return c


def launches(x: Any, n: int) -> None:  # noqa: ANN401
    """``n`` launches of ``x*2`` (256 MB read, 256 MB written each)."""
    import torch

    for _ in range(n):
        x.mul(2)
    torch.cuda.synchronize()


def case(  # noqa: PLR0913, PLR0917
    x: Any,  # noqa: ANN401
    order: str,
    metrics: tuple[str, ...],
    interval_ns: int,
    batches: int,
    per_batch: int,
) -> dict[str, Any]:
    """One order's samples, zeros and bytes."""
    from cupti import cupti
    from nsight_lab.backends.pm.live import CuptiImage, LiveDecoder

    out: dict[str, Any] = {"order": order, "metrics": len(metrics)}
    c = collector(metrics, interval_ns)
    chunks: list[Any] = []
    decoder = None
    try:
        if order.startswith("live"):
            decoder = LiveDecoder(CuptiImage(c, metrics), metrics, interval_ns)
            c.start()
            if order == "live_after":
                decoder.image.reinit()
            decoder.run()
            for _ in range(batches):
                launches(x, per_batch)
                decoder.wait_past(int(cupti.get_timestamp()), timeout_s=20)
                chunks += decoder.take()
            c.stop()
            chunks += decoder.finish()
        else:
            c.start()
            launches(x, batches * per_batch)
            c.stop()
            decoder = LiveDecoder(CuptiImage(c, metrics), metrics, interval_ns)
            chunks += decoder.finish()
    except Exception as exc:  # noqa: BLE001  (the case's result)
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc()[-1500:]
    finally:
        if decoder is not None:
            out.update(
                samples=decoder.samples,
                duty=decoder.duty,
                reinits=decoder.reinits,
                repaired=decoder.repaired,
                zeros=decoder.zeros[:6],
            )
            decoder.image.close()
        c.disable()
    if chunks:
        read = sum(float(ch.all_values()[:, 0].sum()) for ch in chunks)
        out["read_over_known"] = read / (batches * per_batch * 256 * MiB)
        out["handed"] = sum(len(ch) for ch in chunks)
    return out


def main() -> None:
    """Run every case; write the JSON."""
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    x = torch.randn(64 * MiB, device="cuda")
    launches(x, 3)
    cases = [
        ("live_before", DRAM, 20_000, 3, 1000),
        ("second_session", DRAM, 20_000, 3, 1000),
        ("live_after", DRAM, 20_000, 3, 1000),
        ("live_before", FOUR, 20_000, 2, 300),
        ("stopped_fresh", DRAM, 5_000, 1, 600),
        ("stopped_fresh", DRAM, 20_000, 1, 300),
    ]
    results = []
    for order, metrics, interval, batches, per in cases:
        t0 = time.perf_counter()
        name = "live_before" if order == "second_session" else order
        got = case(x, name, metrics, interval, batches, per)
        got.update(case=order, interval_ns=interval, s=time.perf_counter() - t0)
        results.append(got)
        print(json.dumps({k: v for k, v in got.items() if k != "traceback"})[:900])
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
