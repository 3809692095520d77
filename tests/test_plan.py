from __future__ import annotations

import pytest

from nsight_lab.contract.collector import Availability
from nsight_lab.contract.registry import probe_all
from nsight_lab.errors import BackendUnavailableError, OptionError, PlanError
from nsight_lab.options import parse_options
from nsight_lab.plan import make_plan

GPU = {
    "cpu": Availability(ok=True, reason="host"),
    "events": Availability(ok=True, reason="cuda"),
    "cupti": Availability(ok=False, reason="not here"),
    "ncu": Availability(
        ok=False, reason="ncu not found", hint="install Nsight Compute"
    ),
    "pm": Availability(ok=False, reason="cupti-python is not installed"),
}
NO_GPU = {
    **GPU,
    "events": Availability(ok=False, reason="no CUDA GPU visible", hint="use a GPU"),
}


def test_auto_prefers_events_on_a_gpu_and_says_why() -> None:
    plan = make_plan(parse_options("--configs 1,2 --runs 3"), GPU)
    assert plan.backend == "events"
    assert "GPU" in plan.backend_reason
    assert plan.runs_planned == 6


def test_auto_falls_back_to_cpu_with_the_reason() -> None:
    plan = make_plan(parse_options(""), NO_GPU)
    assert plan.backend == "cpu"
    assert "no CUDA GPU visible" in plan.backend_reason


def test_requested_backend_that_cannot_run_explains() -> None:
    with pytest.raises(
        BackendUnavailableError,
        match="backend 'events' is unavailable: no CUDA GPU visible; use a GPU",
    ):
        make_plan(parse_options("--backend events"), NO_GPU)


def test_counters_need_ncu() -> None:
    with pytest.raises(BackendUnavailableError, match="ncu not found"):
        make_plan(parse_options("--metrics dram__bytes_read.sum"), GPU)
    with pytest.raises(
        PlanError,
        match=r"--metrics dram__bytes_read.sum needs the ncu or pm backend",
    ):
        make_plan(parse_options("--metrics dram__bytes_read.sum --backend events"), GPU)


def test_model_work_only_for_builtin_derived() -> None:
    assert make_plan(parse_options("--derive tflops"), GPU).model_work
    assert not make_plan(parse_options("--derive myfn"), GPU).model_work


def test_probe_table_on_this_machine_names_every_backend() -> None:
    table = probe_all()
    assert set(table) == {"cpu", "events", "cupti", "ncu", "pm"}
    assert table["cpu"].ok
    assert table["ncu"].reason


def test_a_grid_above_the_limit_is_refused_before_it_is_laid_out() -> None:
    from dataclasses import replace

    opts = replace(
        parse_options("--configs 1,2"),
        params=tuple((f"p{i}", tuple(range(100))) for i in range(12)),
    )  # 10^24 configs, past the parser's own check
    with pytest.raises(OptionError, match="--max-configs"):  # the options' check
        make_plan(opts, GPU)
    plan = make_plan(parse_options("--configs 1,2 --param m=1,2,3"), GPU)
    assert len(plan.configs) == 6


def test_isolate_means_the_isolated_backend() -> None:
    ncu_ok = {**GPU, "ncu": Availability(ok=True, reason="ncu here")}
    plan = make_plan(parse_options("--isolate"), ncu_ok)
    assert plan.backend == "ncu"
    assert plan.backend_reason == "requested with --backend ncu"
    assert "dram__bytes_read.sum" in plan.options.metrics  # the roofline's counters
    with pytest.raises(
        PlanError,
        match=r"--isolate runs the cell in a child process under Nsight Compute "
        r"\(the ncu backend\), not with --backend events; drop one of the two",
    ):
        make_plan(parse_options("--isolate --backend events"), ncu_ok)


def test_auto_says_when_nothing_can_time_the_cell() -> None:
    with pytest.raises(
        BackendUnavailableError,
        match=r"no backend can time this cell here \(tried events, cpu\): "
        r"events backend not probed",
    ):
        make_plan(parse_options(""), {})


# ------------------------------------------------------- the plan is pure, probed once


@pytest.fixture
def no_hardware(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way to ask the GPU, its tools or the store raises."""
    from nsight_lab.backends import gpu
    from nsight_lab.backends.pm import availability
    from nsight_lab.contract import registry
    from nsight_lab.gpu import ncu as tools
    from nsight_lab.gpu import nvml, stack
    from nsight_lab.store import run_store

    def asked(*_args: object, **_kwargs: object) -> None:
        msg = "the plan asked the hardware or the store"
        raise AssertionError(msg)

    for module, name in [
        (registry, "probe_all"),
        (registry, "get_collector"),
        (gpu, "require_cuda"),
        (availability, "require_cuda"),
        (availability.PmChecks, "verdict"),
        (availability.PmChecks, "check"),
        (nvml, "nvml_devices"),
        (stack, "counter_permission"),
        (tools, "find_ncu"),
        (run_store.RunStore, "__init__"),
    ]:
        monkeypatch.setattr(module, name, asked)


@pytest.mark.usefixtures("no_hardware")
@pytest.mark.parametrize(
    "line",
    [
        "--configs 1,2 --runs 3",
        "--backend pm",
        "--metrics dram__bytes_read.sum",
        "--backend pm --metrics dram__bytes_read.sum --derive gbps",
        "--isolate --metrics dram__bytes_read.sum",
    ],
)
def test_the_plan_is_a_pure_function_of_options_and_probe(line: str) -> None:
    from nsight_lab.contract.probe import MetricVerdict, ProbeResult

    ok = Availability(ok=True, reason="here")
    asked = ("dram__bytes_read.sum",)
    probe = ProbeResult(
        backends={**GPU, "ncu": ok, "pm": ok},
        verdicts={"pm": MetricVerdict(asked, given=True, chosen=asked)},
    )
    options = parse_options(line)
    first = make_plan(options, probe)
    assert make_plan(options, probe) == first
    assert make_plan(parse_options(line), probe) == first


def test_a_notebook_function_replaces_the_model_in_the_plan() -> None:
    options = parse_options("--derive tflops,gbps")
    assert make_plan(options, GPU).model_work
    assert make_plan(options, GPU, notebook_derives={"tflops"}).model_work
    assert not make_plan(options, GPU, notebook_derives={"tflops", "gbps"}).model_work


@pytest.mark.usefixtures("no_hardware")
def test_a_refusal_in_the_probe_moves_auto_on_without_asking_again() -> None:
    from nsight_lab.contract.probe import MetricVerdict, ProbeResult

    asked = ("x__y.sum",)
    refusal = "--metrics: PM sampling on GH100 cannot sample x__y.sum"
    ok = Availability(ok=True, reason="here")
    probe = ProbeResult(
        backends={**GPU, "ncu": ok, "pm": ok},
        verdicts={"pm": MetricVerdict(asked, given=True, refused=refusal)},
    )
    plan = make_plan(parse_options("--metrics x__y.sum"), probe)
    assert plan.backend == "ncu"
    assert plan.backend_reason.endswith(refusal)


def test_a_cell_is_probed_once_before_it_is_planned(
    ip, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nsight_lab.backends.probe import Prober
    from nsight_lab.contract import registry

    probed: list[str] = []
    made: list[object] = []
    real_get = registry.get_collector
    real_probe = Prober.probe

    def get_collector(backend_id: str):
        collector = real_get(backend_id)
        real = collector.probe

        def probe():
            probed.append(backend_id)
            return real()

        collector.probe = probe
        return collector

    def probe(self, options, backends=None):
        found = real_probe(self, options, backends)
        made.append(found)
        return found

    monkeypatch.setattr(registry, "get_collector", get_collector)
    monkeypatch.setattr(Prober, "probe", probe)
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 2 --warmup 0 --quiet\nx = sum(range(100))\n"
    )
    assert result.error_in_exec is None, result.error_in_exec
    assert len(made) == 1
    # A named backend is the only one asked (the GPU probes import PyTorch) ...
    assert probed == ["cpu"]
    # ... auto asks each backend, once.
    probed.clear()
    result = ip.run_cell(
        "%%nsight --backend auto --runs 2 --warmup 0 --quiet\nx = sum(range(100))\n"
    )
    assert result.error_in_exec is None, result.error_in_exec
    assert len(made) == 2
    assert sorted(probed) == sorted(registry.backend_ids())  # each backend once
