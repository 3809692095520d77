from __future__ import annotations

import json

import pytest

from nsight_lab.contract.records import SCHEMA_VERSION
from nsight_lab.figures import CHART_ORDER
from nsight_lab.results import stored_results, summary_rows
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.units import format_duration

INPUT_ERRORS = {"RequestError", "QueryError", "BaselineError"}
"""What a malformed request is answered with (subclasses of InputError: 400)."""


async def get_json(jp_fetch, *parts, **params):
    response = await jp_fetch(
        "nsight-lab", "api", *parts, params=params, raise_error=False
    )
    return response.code, json.loads(response.body)


# -- list ----------------------------------------------------------------------------


async def test_list_is_newest_first_with_run_counts(jp_fetch, filled):
    # When
    code, payload = await get_json(jp_fetch, "sessions")

    # Then
    assert code == 200
    assert set(payload) == {"schema_version", "total", "sessions"}
    assert payload["schema_version"] == SCHEMA_VERSION
    assert payload["total"] == 3
    ids = [s["id"] for s in payload["sessions"]]
    assert ids == [filled.running, filled.candidate, filled.base]
    counts = {s["id"]: s["run_count"] for s in payload["sessions"]}
    assert counts == {filled.base: 11, filled.candidate: 9, filled.running: 0}
    first = payload["sessions"][0]
    assert first["status"] == "running"
    assert first["name"] == "live"
    assert {"notebook", "device", "backend", "created_at", "configs"} <= set(first)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"notebook": "work/a.ipynb"}, ["running", "base"]),
        ({"annotation": "add"}, ["base"]),
        ({"annotation": "matmul"}, ["candidate", "base"]),
        ({"device": "NVIDIA H100"}, ["candidate"]),
        ({"backend": "cpu"}, ["running", "candidate"]),
        ({"status": "failed"}, ["candidate"]),
        ({"text": "NEEDLE"}, ["running"]),
        ({"text": "copy"}, ["candidate"]),  # a region name
        ({"notebook": "work/a.ipynb", "backend": "events"}, ["base"]),
        ({"notebook": "nowhere.ipynb"}, []),
    ],
)
async def test_list_filters(jp_fetch, filled, params, expected):
    # When
    code, payload = await get_json(jp_fetch, "sessions", **params)

    # Then
    assert code == 200
    assert [s["id"] for s in payload["sessions"]] == [
        getattr(filled, name) for name in expected
    ]
    assert payload["total"] == len(expected)


async def test_list_filters_by_host_and_user(jp_fetch, db_path):
    # Given: sessions of a team store, written on two hosts by two users
    with RunStore(db_path) as store:
        ada = store.create_session(backend="cpu", host="gpu-node-7", user="ada").id
        bob = store.create_session(backend="cpu", host="gpu-node-7", user="bob").id
        store.create_session(backend="cpu", host="laptop", user="ada")
        for sid in (ada, bob):
            store.finish_session(sid, "completed")

    # When
    code, payload = await get_json(jp_fetch, "sessions", host="gpu-node-7", user="ada")
    _, on_host = await get_json(jp_fetch, "sessions", host="gpu-node-7")

    # Then
    assert code == 200
    assert [s["id"] for s in payload["sessions"]] == [ada]
    assert (payload["sessions"][0]["host"], payload["sessions"][0]["user"]) == (
        "gpu-node-7",
        "ada",
    )
    assert [s["id"] for s in on_host["sessions"]] == [bob, ada]


async def test_sessions_say_whether_a_report_is_kept(jp_fetch, db_path):
    """has_report comes from the backend registry (keeps_report), list and detail."""
    with RunStore(db_path) as store:
        ncu = store.create_session(backend="ncu").id
        cpu = store.create_session(backend="cpu").id

    _, listed = await get_json(jp_fetch, "sessions")
    _, detail = await get_json(jp_fetch, "sessions", str(ncu))

    assert {s["id"]: s["has_report"] for s in listed["sessions"]} == {
        ncu: True,
        cpu: False,
    }
    assert detail["session"]["has_report"] is True


async def test_list_filters_by_date_range(jp_fetch, filled):
    # Given: the candidate's creation time, to the microsecond
    at = filled.created_at[1]

    # When
    _, since = await get_json(jp_fetch, "sessions", since=at)
    _, until = await get_json(jp_fetch, "sessions", until=at)
    _, both = await get_json(
        jp_fetch, "sessions", since=filled.created_at[0], until=filled.created_at[2]
    )
    _, day = await get_json(jp_fetch, "sessions", since=at[:10])

    # Then: since is inclusive, until exclusive
    assert [s["id"] for s in since["sessions"]] == [filled.running, filled.candidate]
    assert [s["id"] for s in until["sessions"]] == [filled.base]
    assert [s["id"] for s in both["sessions"]] == [filled.candidate, filled.base]
    assert day["total"] == 3


async def test_list_pages(jp_fetch, filled):
    # When
    _, first = await get_json(jp_fetch, "sessions", limit=2)
    _, second = await get_json(jp_fetch, "sessions", limit=2, offset=2)
    _, past = await get_json(jp_fetch, "sessions", limit=2, offset=10)

    # Then: total counts every match, whatever the page
    assert [s["id"] for s in first["sessions"]] == [filled.running, filled.candidate]
    assert [s["id"] for s in second["sessions"]] == [filled.base]
    assert past["sessions"] == []
    assert first["total"] == second["total"] == past["total"] == 3


@pytest.mark.usefixtures("filled")
async def test_list_allows_the_maximum_limit(jp_fetch):
    code, payload = await get_json(jp_fetch, "sessions", limit=500)
    assert code == 200
    assert payload["total"] == 3


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"limit": "ten"}, "invalid limit 'ten'"),
        ({"limit": "501"}, "invalid limit '501'"),
        ({"limit": "-1"}, "invalid limit '-1'"),
        ({"limit": "1.5"}, "invalid limit '1.5'"),
        ({"offset": "x"}, "invalid offset 'x'"),
        ({"offset": "99999999999999999999"}, "invalid offset"),
        ({"since": "yesterday"}, "invalid since time 'yesterday'"),
        ({"until": "2025-13-45"}, "invalid until time '2025-13-45'"),
        ({"status": "done"}, "invalid status filter 'done'"),
    ],
)
@pytest.mark.usefixtures("filled")
async def test_list_refuses_malformed_arguments(jp_fetch, params, needle):
    # When
    code, payload = await get_json(jp_fetch, "sessions", **params)

    # Then: 400, one line naming the argument
    assert code == 400
    assert payload["error"] in INPUT_ERRORS
    assert needle in payload["message"]
    assert "\n" not in payload["message"]


async def test_list_without_a_store_is_empty_and_creates_nothing(
    jp_fetch, nsight_lab_home
):
    # When
    code, payload = await get_json(jp_fetch, "sessions")
    bad_code, bad = await get_json(jp_fetch, "sessions", since="soon")

    # Then
    assert code == 200
    assert payload["total"] == 0
    assert payload["sessions"] == []
    assert bad_code == 400  # filters are checked the same way
    assert bad["error"] in INPUT_ERRORS
    assert not (nsight_lab_home / "store.sqlite").exists()


async def test_list_sees_a_store_created_after_the_server_started(jp_fetch, db_path):
    # Given: the server has answered once without a store
    await get_json(jp_fetch, "sessions")
    with RunStore(db_path) as store:
        sid = store.create_session(backend="cpu").id

    # When
    _, payload = await get_json(jp_fetch, "sessions")

    # Then
    assert [s["id"] for s in payload["sessions"]] == [sid]


# -- one session ---------------------------------------------------------------------


async def test_session_has_its_runs_with_ids(jp_fetch, filled):
    # When
    code, payload = await get_json(jp_fetch, "sessions", str(filled.base))

    # Then
    assert code == 200
    assert set(payload) == {
        "schema_version", "session", "runs", "last_run_id", "next_after_id", "has_more",
    }  # fmt: skip
    assert payload["has_more"] is False
    assert payload["session"]["id"] == filled.base
    assert payload["session"]["run_count"] == 11
    runs = payload["runs"]
    assert len(runs) == 11
    ids = [r["id"] for r in runs]
    assert ids == sorted(ids)
    assert payload["last_run_id"] == ids[-1]
    first = runs[0]
    assert first["annotation"] == "matmul"
    assert first["duration_ns"] == 100_000.0
    assert first["config"] == {"n": 1024}
    assert first["metrics"] == {"dram__bytes_read.sum": 1.0e6}
    assert first["telemetry"]["sm_clock_mhz"] == 1980.0
    assert first["schema_version"] == SCHEMA_VERSION


async def test_session_after_id_returns_only_newer_runs(jp_fetch, filled):
    # Given
    _, full = await get_json(jp_fetch, "sessions", str(filled.base))
    cut = full["runs"][7]["id"]

    # When
    _, newer = await get_json(jp_fetch, "sessions", str(filled.base), after_id=cut)
    _, none = await get_json(
        jp_fetch, "sessions", str(filled.base), after_id=full["last_run_id"]
    )

    # Then
    assert [r["id"] for r in newer["runs"]] == [r["id"] for r in full["runs"][8:]]
    assert none["runs"] == []
    assert none["last_run_id"] == full["last_run_id"]


async def test_session_with_figures_has_the_charts(jp_fetch, filled):
    # When
    code, payload = await get_json(jp_fetch, "sessions", str(filled.base), figures=1)
    _, without = await get_json(jp_fetch, "sessions", str(filled.base))
    _, newer = await get_json(
        jp_fetch, "sessions", str(filled.base), figures=1, after_id=10**6
    )

    # Then: plotly JSON by chart name, built from every run of the session
    assert code == 200
    figures = payload["figures"]
    assert {"duration", "clocks"} <= set(figures)
    for figure in figures.values():
        assert {"data", "layout"} <= set(figure)
    assert "figures" not in without
    assert newer["runs"] == []
    assert newer["figures"] == figures


async def test_session_without_runs_has_figures_too(jp_fetch, filled):
    code, payload = await get_json(
        jp_fetch, "sessions", str(filled.running), figures="true"
    )
    assert code == 200
    assert isinstance(payload["figures"], dict)


async def test_session_nan_durations_are_null_json(jp_fetch, db_path, record_factory):
    # Given: a run whose duration was not measured
    with RunStore(db_path) as store:
        sid = store.create_session(backend="cpu").id
        store.add_runs([record_factory(sid, "r", float("nan"))])

    # When
    response = await jp_fetch("nsight-lab", "api", "sessions", str(sid))

    # Then: strict JSON (no NaN token)
    assert b"NaN" not in response.body
    assert json.loads(response.body)["runs"][0]["duration_ns"] is None


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"after_id": "last"}, "invalid after_id 'last'"),
        ({"figures": "maybe"}, "invalid figures 'maybe'"),
    ],
)
async def test_session_refuses_malformed_arguments(jp_fetch, filled, params, needle):
    code, payload = await get_json(jp_fetch, "sessions", str(filled.base), **params)
    assert code == 400
    assert needle in payload["message"]


@pytest.mark.usefixtures("filled")
async def test_unknown_session_is_404(jp_fetch):
    # When
    code, payload = await get_json(jp_fetch, "sessions", "999")

    # Then
    assert code == 404
    assert payload["error"] == "NotFoundError"
    assert "no session with id 999" in payload["message"]


async def test_session_without_a_store_is_404(jp_fetch, nsight_lab_home):
    code, payload = await get_json(jp_fetch, "sessions", "1")
    assert code == 404
    assert "does not exist yet" in payload["message"]
    assert not (nsight_lab_home / "store.sqlite").exists()


@pytest.mark.usefixtures("filled")
async def test_huge_session_id_is_refused(jp_fetch):
    code, payload = await get_json(jp_fetch, "sessions", "9" * 30)
    assert code == 400
    assert payload["error"] in INPUT_ERRORS


# -- delete --------------------------------------------------------------------------


async def test_delete_removes_the_session_its_runs_and_its_reports(
    jp_fetch, filled, reports_dir, db_path
):
    # Given
    kept = reports_dir / f"session_{filled.base}"
    kept.mkdir(parents=True)
    (kept / "config_0.ncu-rep").write_bytes(b"report")
    other = reports_dir / f"session_{filled.candidate}"
    other.mkdir()

    # When
    response = await jp_fetch(
        "nsight-lab", "api", "sessions", str(filled.base), method="DELETE"
    )

    # Then
    assert response.code == 204
    assert response.body == b""
    assert not kept.exists()
    assert other.exists()
    code, _ = await get_json(jp_fetch, "sessions", str(filled.base))
    assert code == 404
    _, listed = await get_json(jp_fetch, "sessions")
    assert filled.base not in [s["id"] for s in listed["sessions"]]
    with RunStore(db_path) as store:
        assert store.last_run_id(filled.base) == 0


@pytest.mark.usefixtures("filled")
async def test_delete_unknown_session_is_404(jp_fetch):
    response = await jp_fetch(
        "nsight-lab", "api", "sessions", "999", method="DELETE", raise_error=False
    )
    assert response.code == 404
    assert json.loads(response.body)["error"] == "NotFoundError"


# -- what a view shows, computed once in Python ---------------------------------------


_WRITERS: list[RunStore] = []
"""Writers kept open for the test (on PostgreSQL a session is running while its
writer's connection is open), closed after it."""


@pytest.fixture(autouse=True)
def _close_writers():
    yield
    while _WRITERS:
        _WRITERS.pop().close()


def _three_by_thirty(db_path, record_factory, *, runs_done):
    """A running 3-config x 30-run session with ``runs_done`` runs of 2 regions."""
    configs = [{"n": 1}, {"n": 2}, {"n": 3}]
    store = RunStore(db_path)
    _WRITERS.append(store)
    session = store.create_session(
        backend="cpu", configs=configs, runs_planned=3 * 30,
        options={"params": {"n": [1, 2, 3]}},
    )  # fmt: skip
    records = [
        record_factory(
            session.id,
            region,
            1000.0 + k,
            config_index=k // 30,
            config=configs[k // 30],
            run_index=k % 30,
        )
        for k in range(runs_done)
        for region in ("a", "b")
    ]
    store.add_runs(records)
    return session.id


async def test_progress_is_served_with_unambiguous_names(
    jp_fetch, db_path, record_factory
):
    # Given: a 3 x 30 cell whose first config is done (60 records: 2 regions)
    sid = _three_by_thirty(db_path, record_factory, runs_done=30)

    # When
    code, payload = await get_json(jp_fetch, "sessions", str(sid), tail=5)
    _, listed = await get_json(jp_fetch, "sessions")

    # Then: totals are totals, per-config counts per config
    assert code == 200
    progress = payload["session"]["progress"]
    assert progress == {
        "status": "running",
        "configs_total": 3,
        "config_index": 0,
        "runs_per_config": 30,
        "runs_planned_total": 90,
        "runs_done_in_config": 30,
        "runs_done_total": 30,
        "elapsed_s": None,
        "eta_s": None,
        "fraction": pytest.approx(1 / 3),
        "text": "30 / 90 runs · config 1 / 3 · run 30 / 30",
    }
    item = listed["sessions"][0]
    assert item["runs_per_config"] == 30
    assert item["runs_planned_total"] == 90
    assert "runs_planned" not in item
    assert "progress" not in item  # the list stays cheap: progress is per session


async def test_progress_of_a_session_in_its_second_config(
    jp_fetch, db_path, record_factory
):
    sid = _three_by_thirty(db_path, record_factory, runs_done=35)
    _, payload = await get_json(jp_fetch, "sessions", str(sid), limit=1)
    progress = payload["session"]["progress"]
    assert (progress["config_index"], progress["runs_done_in_config"]) == (1, 5)
    assert progress["runs_done_total"] == 35
    assert progress["text"] == "35 / 90 runs · config 2 / 3 · run 5 / 30"


async def test_summary_is_over_every_run_not_the_page(
    jp_fetch, db_path, record_factory
):
    # Given: 35 runs, of which the page holds the last 5
    sid = _three_by_thirty(db_path, record_factory, runs_done=35)

    # When
    code, payload = await get_json(jp_fetch, "sessions", str(sid), tail=5, figures=1)

    # Then: the summary rows are the results' (the widget's), over all runs
    assert code == 200
    assert len(payload["runs"]) == 5
    assert payload["chart_order"] == list(CHART_ORDER)
    assert list(payload["figures"]) == ["duration", "clocks"]
    with RunStore(db_path) as store:
        session = store.get_session(sid)
        expected = summary_rows(stored_results(store.runs(sid), session, None))
    assert payload["summary"] == json.loads(json.dumps(expected))
    runs = {(r["Region"], r["n"]): r["Runs"] for r in payload["summary"]}
    assert runs == {
        ("a", "1"): "30",
        ("b", "1"): "30",
        ("a", "2"): "5",
        ("b", "2"): "5",
    }
    first = payload["summary"][0]
    duration = next(v for k, v in first.items() if k.startswith("Duration"))
    assert duration == format_duration(1000.0 + 14.5)  # the median of runs 0..29


async def test_a_live_refresh_gets_the_newest_run_after_the_one_it_holds(
    jp_fetch, db_path, record_factory
):
    """``tail=1`` (the live view) and ``tail=0`` (a view only) are answered from the
    session's one read: the newest run only when newer than ``after_id``."""
    sid = _three_by_thirty(db_path, record_factory, runs_done=31)
    _, full = await get_json(jp_fetch, "sessions", str(sid), limit=1000)
    newest = full["runs"][-1]
    last = newest["id"]
    for after, want in ((0, [newest]), (last - 1, [newest]), (last, [])):
        _, page = await get_json(jp_fetch, "sessions", str(sid), tail=1, after_id=after)
        assert page["runs"] == want
        assert page["last_run_id"] == (newest["id"] if want else after)
        assert page["has_more"] is False
        assert page["session"]["progress"]["runs_done_total"] == 31
    _, none = await get_json(jp_fetch, "sessions", str(sid), tail=0)
    assert none["runs"] == []
    assert none["session"]["run_count"] == 62
    code, _ = await get_json(jp_fetch, "sessions", "9999", tail=1)
    assert code == 404
