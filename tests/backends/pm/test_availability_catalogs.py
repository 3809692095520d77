"""Which backend the plan takes for metrics PM sampling does or does not take, per chip.

Planned against every PM-sampling catalog in ``tests/fixtures`` (``catalogs.py``):
the probe's real path (:class:`~nsight_lab.backends.probe.Prober`,
:class:`~nsight_lab.backends.pm.availability.PmChecks`, the metric check) on a chip
whose host API answers from the catalog. NVIDIA nsight-python's examples 08, 09 and
11 and the tutorial's step 6 ask for metrics PM sampling refuses on GH100: ``auto``
must take ncu and say which metrics, ``--backend pm`` must refuse naming them, and
none of them may be trimmed away (examples 08/09/11 failed with "no metric left to
PM-sample" on an H100; step 6 lost its ``sm__throughput`` row).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.backends.pm import availability
from nsight_lab.backends.pm.availability import PmChecks
from nsight_lab.backends.pm.metrics import DEFAULT_METRICS, MetricCheck
from nsight_lab.backends.probe import Prober
from nsight_lab.contract.collector import Availability
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.errors import BackendUnavailableError, PlanError
from nsight_lab.options import ProfileOptions, parse_options
from nsight_lab.plan import make_plan
from tests.backends.pm.catalogs import (
    Catalog,
    CatalogHost,
    catalog_paths,
    load,
    script,
)

if TYPE_CHECKING:
    from pathlib import Path

OK = Availability(ok=True, reason="here")
TABLE = {
    "cpu": OK,
    "events": OK,
    "cupti": OK,
    "ncu": OK,
    "pm": OK,
}
NO_NCU = {**TABLE, "ncu": Availability(ok=False, reason="ncu not found")}

SETS: dict[str, tuple[str, ...]] = script().requested_sets()
REFUSED_ON_GH100 = (
    "nsight-python 08_multiple_metrics",
    "nsight-python 09_advanced_metric_custom",
    "nsight-python 11_output_csv",
    "tutorial step 6",
)


class CatalogChecks(PmChecks):
    """PM sampling starts; the chip answers from the catalog (no CUDA, no store)."""

    def __init__(self, catalog: Catalog) -> None:
        super().__init__(cache=None)
        self.cache = None  # type: ignore[assignment]  # verdicts in memory only
        self.catalog = catalog

    def check(self, torch: Any, index: int) -> MetricCheck:  # noqa: ARG002
        return MetricCheck(self.catalog.gpu, CatalogHost(self.catalog), cache=None)

    def start_problem(self, index: int) -> str | None:  # noqa: ARG002
        return None


@pytest.fixture(params=catalog_paths(), ids=lambda p: p.stem)
def catalog(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    gpu = SimpleNamespace(cuda=SimpleNamespace(current_device=lambda: 0))
    monkeypatch.setattr(availability, "require_cuda", lambda _backend: gpu)
    path: Path = request.param
    return load(path)


def _plan(catalog: Catalog, options: ProfileOptions, table=TABLE):
    probe = Prober(CatalogChecks(catalog)).probe(options, table)
    return make_plan(options, probe)


def _magic(metrics: tuple[str, ...], backend: str = "auto") -> ProfileOptions:
    """As ``%%nsight --metrics ...`` gives them."""
    return parse_options(f"--metrics {','.join(metrics)} --backend {backend}")


def _api(metrics: tuple[str, ...]) -> ProfileOptions:
    """As nsight-python's ``metrics=`` gives them (no ``--metrics`` among given)."""
    return ProfileOptions(metrics=(TIME_METRIC, *metrics), backend="auto")


def test_a_catalog_is_there_and_says_where_it_comes_from() -> None:
    paths = catalog_paths()
    assert any(p.name == "pm_catalog_gh100_facts.json" for p in paths)
    for path in paths:
        found = load(path)
        assert found.chip, path
        assert found.data.get("source"), path


@pytest.mark.parametrize("name", REFUSED_ON_GH100)
@pytest.mark.parametrize("via", [_magic, _api], ids=["magic", "api"])
def test_auto_takes_ncu_and_says_which_metrics_pm_sampling_refuses(
    catalog: Catalog, name: str, via
) -> None:
    metrics = SETS[name]
    refused = catalog.refused(metrics)
    assert refused, f"{catalog.path.name}: PM sampling takes {name} on {catalog.chip}"
    plan = _plan(catalog, via(metrics))
    assert plan.backend == "ncu"
    assert plan.options.extra_metrics == metrics  # nothing trimmed
    reason = plan.backend_reason
    assert "\n" not in reason
    assert f"PM sampling on {catalog.chip}" in reason
    for metric in refused:
        assert metric in reason.split("not PM sampling:")[1]


@pytest.mark.parametrize("name", REFUSED_ON_GH100)
def test_backend_pm_refuses_in_one_line_naming_the_metrics(
    catalog: Catalog, name: str
) -> None:
    metrics = SETS[name]
    with pytest.raises(PlanError) as caught:
        _plan(catalog, _magic(metrics, backend="pm"))
    text = str(caught.value)
    assert "\n" not in text
    assert "--backend ncu" in text
    for metric in catalog.refused(metrics):
        assert metric in text
    assert "no metric left" not in text


def test_without_ncu_auto_says_why_neither_counter_backend_can(
    catalog: Catalog,
) -> None:
    metrics = SETS["nsight-python 08_multiple_metrics"]
    with pytest.raises(BackendUnavailableError) as caught:
        _plan(catalog, _api(metrics), table=NO_NCU)
    text = str(caught.value)
    assert "pm: --metrics: PM sampling on" in text
    assert "ncu: ncu not found" in text
    assert "\n" not in text


def test_a_set_pm_sampling_takes_is_pm_sampled(catalog: Catalog) -> None:
    taken = catalog.one_pass_sets()
    assert taken
    for metrics in taken:
        for via in (_magic, _api):
            plan = _plan(catalog, via(metrics))
            assert plan.backend == "pm", (metrics, plan.backend_reason)
            assert plan.metric_verdict is not None
            assert plan.metric_verdict.chosen == metrics


def test_the_dram_pair_is_pm_sampled(catalog: Catalog) -> None:
    if catalog.one_pass(SETS["DRAM pair"]) is not True:
        pytest.skip(f"{catalog.path.name} does not record the DRAM pair in one pass")
    plan = _plan(catalog, _api(SETS["DRAM pair"]))
    assert plan.backend == "pm"
    assert "PM-sampled" in plan.backend_reason


def test_the_defaults_alone_are_trimmed_not_refused(catalog: Catalog) -> None:
    """``--backend pm`` without ``--metrics``: what fits is sampled, the rest noted."""
    plan = _plan(catalog, parse_options("--backend pm"))
    assert plan.backend == "pm"
    verdict = plan.metric_verdict
    assert verdict is not None
    assert verdict.asked == DEFAULT_METRICS
    assert verdict.refused is None
    assert not verdict.given
    # A hand-written catalog knows no set of three: the check stops there and the
    # defaults go unchecked to CUPTI (said in the notes), never refused.
    assert verdict.unchecked is None or "does not record" in verdict.unchecked


def test_requested_defaults_through_the_api_are_all_or_nothing() -> None:
    """The defaults' exact set is trimmed; any other set asked for is not."""
    assert not availability.asked_for(DEFAULT_METRICS, given=False)
    assert availability.asked_for(DEFAULT_METRICS[:2], given=False)
    assert availability.asked_for(DEFAULT_METRICS, given=True)
