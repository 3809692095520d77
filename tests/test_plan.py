from __future__ import annotations

import pytest

from nsight_lab.contract.collector import Availability
from nsight_lab.contract.registry import probe_all
from nsight_lab.errors import BackendUnavailableError, OptionError
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
        OptionError,
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
    with pytest.raises(OptionError, match="--max-configs"):
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
        OptionError,
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
