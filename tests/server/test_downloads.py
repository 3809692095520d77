from __future__ import annotations

import io
import json

import pandas as pd
import pytest

# -- export --------------------------------------------------------------------------


async def export(jp_fetch, sid, **params):
    return await jp_fetch(
        "nsight-lab", "api", "sessions", str(sid), "export",
        params=params, raise_error=False,
    )  # fmt: skip


def read_table(body: bytes, fmt: str) -> pd.DataFrame:
    if fmt == "csv":
        return pd.read_csv(io.BytesIO(body))
    return pd.read_parquet(io.BytesIO(body))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
async def test_export_runs_has_every_run(jp_fetch, filled, fmt):
    # Given: the runs as the session endpoint sends them
    session = await jp_fetch("nsight-lab", "api", "sessions", str(filled.base))
    runs = json.loads(session.body)["runs"]

    # When
    response = await export(jp_fetch, filled.base, format=fmt, what="runs")

    # Then: a download named after the session, that parses back to the runs
    assert response.code == 200
    disposition = response.headers["Content-Disposition"]
    assert disposition == (
        f'attachment; filename="nsight-lab_session_{filled.base}_runs.{fmt}"'
    )
    frame = read_table(response.body, fmt)
    assert len(frame) == len(runs) == 11
    assert frame["duration_ns"].tolist() == [r["duration_ns"] for r in runs]
    assert frame["annotation"].tolist() == [r["annotation"] for r in runs]
    assert frame["param_n"].tolist() == [r["config"]["n"] for r in runs]
    assert set(frame["metric"]) == {"gpu__time_duration.sum"}
    assert frame["sm_clock_mhz"].tolist() == [1980.0] * 11
    assert frame["session_id"].tolist() == [filled.base] * 11


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
async def test_export_results_has_one_row_per_region_metric_and_config(
    jp_fetch, filled, fmt
):
    # When
    response = await export(jp_fetch, filled.base, format=fmt, what="results")

    # Then
    assert response.code == 200
    assert response.headers["Content-Disposition"].endswith(f'_results.{fmt}"')
    frame = read_table(response.body, fmt)
    time = frame[frame["Metric"] == "gpu__time_duration.sum"]
    matmul = time[(time["Annotation"] == "matmul") & (time["n"] == 1024)]
    assert len(matmul) == 1
    row = matmul.iloc[0]
    assert row["AvgValue"] == pytest.approx(100_000.0)
    assert row["MinValue"] == 98_000.0
    assert row["MaxValue"] == 102_000.0
    assert row["NumRuns"] == 5
    big = time[(time["Annotation"] == "matmul") & (time["n"] == 2048)].iloc[0]
    assert big["AvgValue"] == pytest.approx(400_000.0)
    add = time[time["Annotation"] == "add"].iloc[0]
    assert add["AvgValue"] == pytest.approx(11_000.0)


async def test_export_defaults_to_runs_as_csv(jp_fetch, filled):
    response = await export(jp_fetch, filled.candidate)
    assert response.code == 200
    assert response.headers["Content-Type"].startswith("text/csv")
    assert len(read_table(response.body, "csv")) == 9


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"format": "xlsx"}, "invalid format 'xlsx'; expected one of 'csv', 'parquet'"),
        ({"what": "all"}, "invalid what 'all'; expected one of 'runs', 'results'"),
    ],
)
async def test_export_refuses_unknown_choices(jp_fetch, filled, params, needle):
    response = await export(jp_fetch, filled.base, **params)
    assert response.code == 400
    assert json.loads(response.body)["message"] == needle


@pytest.mark.usefixtures("filled")
async def test_export_unknown_session_is_404(jp_fetch):
    response = await export(jp_fetch, 999)
    assert response.code == 404


# -- .ncu-rep ------------------------------------------------------------------------


@pytest.fixture
def kept_reports(filled, reports_dir, nsight_lab_home):
    """Two kept reports of the base session, and files that must never be served."""
    session = reports_dir / f"session_{filled.base}"
    session.mkdir(parents=True)
    (session / "config_0.ncu-rep").write_bytes(b"NCU-REPORT-0")
    (session / "config_1.ncu-rep").write_bytes(b"NCU-REPORT-1")
    (session / "notes.txt").write_bytes(b"not a report")
    secret = nsight_lab_home / "secret.ncu-rep"
    secret.write_bytes(b"SECRET-OUTSIDE-REPORTS")
    (nsight_lab_home / "etc").mkdir()
    (nsight_lab_home / "etc" / "passwd").write_bytes(b"SECRET-OUTSIDE-REPORTS")
    # A symlink inside the running session's folder that points outside reports/.
    linked = reports_dir / f"session_{filled.running}"
    linked.mkdir()
    (linked / "config_0.ncu-rep").symlink_to(secret)
    return session


async def report(raw_fetch, sid, query=""):
    return await raw_fetch(f"nsight-lab/api/sessions/{sid}/report{query}")


async def test_report_sends_the_first_kept_report(raw_fetch, filled, kept_reports):
    # When
    response = await report(raw_fetch, filled.base)

    # Then
    assert response.code == 200
    assert response.body == b"NCU-REPORT-0"
    assert response.headers["Content-Type"] == "application/octet-stream"
    assert response.headers["Content-Disposition"] == (
        f'attachment; filename="nsight-lab_session_{filled.base}_config_0.ncu-rep"'
    )
    assert kept_reports.is_dir()


async def test_report_sends_the_asked_config(raw_fetch, filled, kept_reports):
    response = await report(raw_fetch, filled.base, "?config=1")
    assert response.code == 200
    assert response.body == b"NCU-REPORT-1"
    assert kept_reports.is_dir()


@pytest.mark.usefixtures("kept_reports")
async def test_report_of_a_missing_config_is_404_with_a_message(raw_fetch, filled):
    # When
    response = await report(raw_fetch, filled.base, "?config=7")

    # Then
    assert response.code == 404
    message = json.loads(response.body)["message"]
    assert message == (
        f"session {filled.base} has no kept Nsight Compute report for config 7; "
        "configs with a report: 0, 1"
    )


@pytest.mark.usefixtures("kept_reports")
async def test_report_of_a_session_without_reports_is_404(raw_fetch, filled):
    response = await report(raw_fetch, filled.candidate)
    assert response.code == 404
    payload = json.loads(response.body)
    assert payload["error"] == "NotFoundError"
    assert "has no kept Nsight Compute report" in payload["message"]


@pytest.mark.usefixtures("kept_reports")
async def test_report_never_follows_a_symlink_out_of_reports(raw_fetch, filled):
    response = await report(raw_fetch, filled.running)
    assert response.code == 404
    assert b"SECRET" not in response.body


@pytest.mark.usefixtures("kept_reports")
@pytest.mark.parametrize(
    ("path", "codes"),
    [
        ("sessions/..%2F..%2Fetc/report", {404}),
        ("sessions/..%2F..%2Fsecret.ncu-rep/report", {404}),
        ("sessions/%2E%2E/report", {404}),
        ("sessions/../../secret.ncu-rep", {400, 404}),
        ("sessions/1%2F..%2F..%2Fsecret/report", {404}),
        ("sessions/abc/report", {404}),
        ("sessions/-1/report", {404}),
        ("sessions/1.0/report", {404}),
        ("sessions/1/report?config=../x", {400}),
        ("sessions/1/report?config=..%2F..%2Fsecret.ncu-rep", {400}),
        ("sessions/1/report?config=%2Fetc%2Fpasswd", {400}),
        ("sessions/1/report?config=-1", {400}),
        ("sessions/1/report?config=0x1", {400}),
        ("sessions/1/export?format=..%2F..%2Fetc%2Fpasswd", {400}),
        ("sessions/abc", {404}),
        ("sessions/1abc", {404}),
    ],
)
async def test_path_traversal_is_refused(raw_fetch, path, codes):
    # When
    response = await raw_fetch(f"nsight-lab/api/{path}")

    # Then: refused, and nothing outside reports/ was read
    assert response.code in codes
    assert b"SECRET" not in (response.body or b"")


# -- spreadsheet formulas ------------------------------------------------------------


@pytest.fixture
def hostile(db_path):
    from nsight_lab.store.run_store import RunStore

    from .conftest import series

    with RunStore(db_path) as store:
        session = store.create_session(
            backend="cpu", name="=cmd|' /C calc'!A0", configs=[{"n": 1}],
            options={"params": {"n": [1]}},
        )  # fmt: skip
        for annotation in ('=HYPERLINK("http://x")', "+A1", "-2+3", "@A1", "\tt", "ok"):
            store.add_runs(
                series(
                    session.id,
                    annotation,
                    [-1.5, 2.0],
                    config_index=0,
                    config={"n": 1},
                )
            )
        store.finish_session(session.id, "completed")
        return session.id


@pytest.mark.parametrize("what", ["runs", "results"])
async def test_csv_export_neutralises_spreadsheet_formulas(jp_fetch, hostile, what):
    # When
    response = await export(jp_fetch, hostile, format="csv", what=what)

    # Then: every text cell a spreadsheet would run starts with "'"; numbers stay
    assert response.code == 200
    text = response.body.decode()
    assert '"\'=HYPERLINK(""http://x"")"' in text
    frame = pd.read_csv(io.BytesIO(response.body), keep_default_na=False)
    column = "annotation" if what == "runs" else "Annotation"
    cells = set(frame[column])
    assert cells == {'\'=HYPERLINK("http://x")', "'+A1", "'-2+3", "'@A1", "'\tt", "ok"}
    numbers = frame["duration_ns" if what == "runs" else "MinValue"]
    assert numbers.dtype.kind == "f"
    assert -1.5 in set(numbers)


async def test_parquet_export_keeps_the_text_as_stored(jp_fetch, hostile):
    response = await export(jp_fetch, hostile, format="parquet", what="runs")
    assert response.code == 200
    frame = read_table(response.body, "parquet")
    assert '=HYPERLINK("http://x")' in set(frame["annotation"])


# -- export off the event loop (issue 22) --------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
async def test_export_is_built_in_the_worker_and_streamed_in_chunks(
    jp_fetch, filled, db_path, fmt, monkeypatch
):
    """A 21 MB export held the server 1.1 s: now built in a child, sent in chunks."""
    import threading
    from pathlib import Path

    from nsight_lab.results.stored import runs_frame
    from nsight_lab.server import downloads
    from nsight_lab.server.workers import Workers
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.text.safe import frame_to_csv

    built, reads = [], []
    real_run, real_open = Workers.run, downloads.Path.open

    async def recorded(self, function, *args):
        path = await real_run(self, function, *args)
        built.append((function.__name__, path))
        return path

    class CountedFile(io.BufferedReader):
        def read(self, size=-1):
            reads.append(threading.current_thread())
            return super().read(size)

    def opened(self, mode="r", *args, **kwargs):
        if mode == "rb" and self.name.startswith("nsight-lab-export-"):
            return CountedFile(io.FileIO(self, "rb"))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Workers, "run", recorded)
    monkeypatch.setattr(downloads.Path, "open", opened)
    monkeypatch.setattr(downloads, "_CHUNK_BYTES", 256)

    # When
    response = await export(jp_fetch, filled.base, format=fmt)

    # Then: built by the worker into a file, removed once sent
    assert response.code == 200
    assert [name for name, _ in built] == ["export_file"]
    assert not Path(built[0][1]).exists()  # noqa: ASYNC240
    # sent in chunks, each read off the event loop
    assert len(reads) >= len(response.body) // 256
    assert threading.current_thread() not in reads
    # the same table as before
    with RunStore(db_path) as store:
        frame = runs_frame(store, [filled.base])
    if fmt == "csv":
        assert response.body == frame_to_csv(frame).encode()
    else:
        pd.testing.assert_frame_equal(read_table(response.body, fmt), frame)
