"""What PM sampling keeps between cells (backends/pm/keep.py), on the CPU replay.

The magic's prober keeps one :class:`Keeper` for the kernel's life and hands it to
the pm collector with its verdict. A second cell on the same chip and metrics makes
no config image and no calibration, and starts at the interval the first settled on
(one ``set_config``, on a session enabled afresh); other metrics replace what was
kept; a CUPTI failure drops it; the keeper releases it when collected or closed.
"""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any

import pytest

from nsight_lab.backends.pm import collector as pm
from nsight_lab.backends.pm import interval
from nsight_lab.backends.pm.availability import PmChecks
from nsight_lab.backends.pm.keep import Keeper, Kept
from nsight_lab.backends.pm.metrics import DEFAULT_METRICS
from nsight_lab.contract.probe import MetricVerdict
from nsight_lab.errors import MeasurementError
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan
from nsight_lab.runner import Runner

from .replay import DRAM_PAIR, ReplayImage, transformer_cell
from .test_replay import Replay, Truth, _probe, cell, replayed

CELL = transformer_cell()


def profile_kept(
    line: str, body: Any, keeper: Keeper
) -> tuple[pm.PmMeasurement, list[Any]]:
    """Profile as the magic does: the prober's verdict carries its keeper."""
    options = parse_options(f"--backend pm {line}")
    probe = _probe(options)
    verdicts = {k: replace(v, keeper=keeper) for k, v in probe.verdicts.items()}
    plan = make_plan(options, replace(probe, verdicts=verdicts))
    measurement = pm.PmMeasurement(options, plan.metric_verdict)
    batches: list[list[Any]] = []
    try:
        Runner(plan, measurement, 1, batches.append).run(body)
    finally:
        measurement.close()
    return measurement, [r for batch in batches for r in batch]


def counted_calibrations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    calibrate = interval.SamplingInterval._calibrate  # noqa: SLF001

    def counting(self: Any) -> float:
        calls.append(1)
        return calibrate(self)

    monkeypatch.setattr(interval.SamplingInterval, "_calibrate", counting)
    return calls


def two_cells(
    monkeypatch: pytest.MonkeyPatch, metrics: tuple[tuple[str, ...], ...]
) -> tuple[Replay, Truth, Keeper, list[pm.PmMeasurement]]:
    replay, truth = replayed(monkeypatch)
    keeper = Keeper()
    done = []
    for asked in metrics:
        line = f"--metrics {','.join(asked)} --runs 10 --warmup 1"
        truth = Truth()
        m, records = profile_kept(line, cell(replay, CELL, truth), keeper)
        assert truth.check(records, m.metrics) == 10 * 12
        done.append(m)
    return replay, truth, keeper, done


def test_by_default_each_cell_makes_its_own_parts_and_releases_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The live decode and kept parts are opt-in until a device run verifies them:
    # unset, every cell decodes stopped on parts made for it (the measured path).
    monkeypatch.delenv("NSIGHT_LAB_PM_DECODE", raising=False)
    calibrations = counted_calibrations(monkeypatch)
    replay, _, keeper, _ = two_cells(monkeypatch, (DRAM_PAIR, DRAM_PAIR))
    first, second = replay.apis
    assert first.released
    assert second.released
    assert len(calibrations) == 2
    assert len(keeper) == 0


def test_a_second_cell_on_the_same_chip_and_metrics_sets_nothing_up_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mode = "live"
    monkeypatch.setenv("NSIGHT_LAB_PM_DECODE", mode)
    calibrations = counted_calibrations(monkeypatch)
    replay, _, keeper, (first,) = two_cells(monkeypatch, (DRAM_PAIR,))
    (api,) = replay.apis
    configured, enables = len(api.configured), api.enables
    m, records = profile_kept(
        "--metrics " + ",".join(DRAM_PAIR) + " --runs 10 --warmup 1",
        cell(replay, CELL, Truth()),
        keeper,
    )
    assert len(records) == 10 * 12
    assert replay.apis == [api]  # the same kept parts
    assert api.config_images == 1  # the config image: made once
    assert calibrations == ([1] if mode == "stopped" else [])  # calibrated once
    # One session, enabled afresh and configured once, at the first cell's interval.
    assert api.enables == enables + 1
    assert len(api.configured) == configured + 1
    assert m.interval_ns == first.interval_ns == api.configured[-1]
    assert len(keeper) == 1


def test_other_metrics_replace_what_was_kept_and_the_first_come_back_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NSIGHT_LAB_PM_DECODE", "live")
    calibrations = counted_calibrations(monkeypatch)
    replay, _, keeper, _ = two_cells(
        monkeypatch, (DRAM_PAIR, DEFAULT_METRICS, DRAM_PAIR)
    )
    pair, seven, again = replay.apis
    assert pair.released
    assert seven.released
    assert not again.released
    assert [a.config_images for a in replay.apis] == [1, 1, 1]
    assert calibrations == []  # live: the decode's cost is measured, not calibrated
    assert len(keeper) == 1
    keeper.close()
    assert again.released


def test_a_cupti_failure_drops_what_was_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    replay, truth, keeper, _ = two_cells(monkeypatch, (DRAM_PAIR,))
    (api,) = replay.apis

    def broken(_image: ReplayImage) -> tuple[int, bool]:
        msg = "ERROR_UNKNOWN"
        raise RuntimeError(msg)

    monkeypatch.setattr(ReplayImage, "decode", broken)
    with pytest.raises(MeasurementError, match="PM sampling failed"):
        profile_kept(
            "--metrics " + ",".join(DRAM_PAIR) + " --runs 10",
            cell(replay, CELL, truth),
            keeper,
        )
    assert len(keeper) == 0
    assert api.released


class Api:
    """Just enough of a SamplingApi to be kept."""

    bytes_per_sample = 1
    released = False

    def release(self) -> None:
        self.released = True


def test_the_keeper_releases_what_it_kept_when_collected() -> None:
    keeper = Keeper()
    api = Api()
    kept = keeper.take((0, "GH100", DRAM_PAIR), lambda: api)  # type: ignore[arg-type,return-value]
    assert keeper.take((0, "GH100", DRAM_PAIR), Api) is kept  # type: ignore[arg-type]
    assert kept.sessions == 2
    del keeper
    gc.collect()
    assert api.released


def test_what_a_cell_ended_with_is_where_the_next_starts() -> None:
    kept = Kept((0, "GH100", DRAM_PAIR), Api())  # type: ignore[arg-type]
    assert kept.interval_for(20_000, tune=True, mode="live") == 20_000
    kept.remember(20_000, tune=True, mode="live", interval_ns=31_000, per_sample_s=1e-5)
    kept.remember(20_000, tune=True, mode="live", interval_ns=33_000, per_sample_s=3e-5)
    assert kept.interval_for(20_000, tune=True, mode="live") == 33_000
    fixed = kept.interval_for(20_000, tune=False, mode="live")
    assert fixed == 20_000  # a cell that fixed its interval: its own
    assert kept.per_sample_s["live"] == pytest.approx(2e-5)  # smoothed


def test_the_prober_hands_its_keeper_to_the_collector_with_every_verdict() -> None:
    checks = PmChecks(cache={})  # type: ignore[arg-type]
    one = checks.verdict(DRAM_PAIR, given=True)  # no GPU here: refused, still kept
    two = checks.verdict(DEFAULT_METRICS, given=False)
    assert one.keeper is two.keeper is checks.keeper
    # The keeper is no part of what a verdict says (plans compare equal).
    assert one == replace(one, keeper=None)
    assert MetricVerdict(DRAM_PAIR, given=True).keeper is None
