"""The sidebar's findings judge against ``%nsight peaks``' measured roofs (issue 31).

``nsight-lab show`` and ``explain`` set the view model's attainable peaks from the
store (``measured_peaks``), and so does the cell's widget (session/target.py); the
server's view models (``viewmodel/cache.py``, through ``viewmodel/roofs.py``) did
not, so the sidebar judged a region against the datasheet while ``explain`` said
something else of the same session. On the H200 fixture (session 4, pm: DRAM bytes
measured), with a kept ``%nsight peaks`` record whose copy bandwidth is 60 % of the
datasheet's.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nsight_lab.roofline.devices import peaks_for
from nsight_lab.roofline.peaks import CACHE_PREFIX, peaks_to_json
from nsight_lab.roofline.placement import Peaks
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel import ViewModels
from nsight_lab.viewmodel.roofs import session_roofs
from nsight_lab.views.explain import explain_json

if TYPE_CHECKING:
    from collections.abc import Iterator

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200_block.sqlite"
PM_SESSION = 4
MEASURED_SHARE = 0.6
"""The kept copy bandwidth, of the datasheet's: a region at 59 % of the datasheet's
roof is near what a copy reaches."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    """A copy of the H200 fixture (never written itself)."""
    target = tmp_path / "store.sqlite"
    shutil.copyfile(FIXTURE, target)
    with RunStore(target) as opened:
        yield opened


def _keep_measured_peaks(store: RunStore, device: str) -> Peaks:
    datasheet = peaks_for(device)
    assert datasheet is not None
    measured = Peaks(
        device=device,
        flops_per_s=dict(datasheet.flops_per_s),
        dram_bytes_per_s=MEASURED_SHARE * datasheet.dram_bytes_per_s,
        source="measured with PyTorch (copy, matmul)",
    )
    store.cache_put(f"{CACHE_PREFIX}{device}", peaks_to_json(measured))
    return measured


def test_the_sidebar_findings_are_explains_with_measured_peaks(store) -> None:
    # Given: the device's peaks, measured by %nsight peaks and kept in the store
    session = store.get_session(PM_SESSION)
    assert session.device is not None
    before = ViewModels().view(store, PM_SESSION)["findings"]
    measured = _keep_measured_peaks(store, session.device)

    # When: the sidebar views the session (a fresh server's view model)
    served = ViewModels().view(store, PM_SESSION)["findings"]

    # Then: its findings are explain's, judged against the measured roof ...
    assert served == explain_json(store, PM_SESSION)["findings"]
    assert served != before
    said = "measured by %nsight peaks"
    assert any(said in line for f in served for line in f["evidence"])
    assert not any(said in line for f in before for line in f["evidence"])
    # ... while the roofline keeps the datasheet's roofs (the table's % of roof).
    peaks, attainable = session_roofs(store, session)
    assert attainable == measured
    assert peaks == peaks_for(session.device)


def test_without_kept_peaks_the_datasheet_is_the_only_roof(store) -> None:
    session = store.get_session(PM_SESSION)
    peaks, attainable = session_roofs(store, session)
    assert attainable is None
    assert peaks is not None
    assert peaks == peaks_for(session.device)
    served = ViewModels().view(store, PM_SESSION)["findings"]
    assert served == explain_json(store, PM_SESSION)["findings"]
