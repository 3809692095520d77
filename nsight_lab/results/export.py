"""``nsight-lab export``'s runs table, written a page of runs at a time.

A session's every run as one DataFrame (:func:`~nsight_lab.results.stored.
runs_frame`) held 1.6 GB at 1,000,000 runs and never finished (issue 29).
:class:`RunsTable` writes the same table in chunks of
:data:`~nsight_lab.store.runs.RUN_PAGE` runs: CSV chunk after chunk (the header
once), Parquet one row group per chunk. The columns are fixed before the first row,
as the whole table would have them (each run's fields, then every parameter and
counter in the order first seen: :meth:`~nsight_lab.store.runs.RunQueries.
run_keys`, one light pass over two columns), so every chunk has the same ones.

What can differ from the unstreamed table: a column of whole numbers that some
other chunk lacks is written as integers in its own chunk (a whole table would make
it floats, ``1.0``). Parameters and counters present in every run (the usual case)
are written identically; ``tests/viewmodel/test_streamed_reads.py`` checks the CSV
file against :func:`runs_frame`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pandas as pd

from nsight_lab.contract.records import telemetry_to_json
from nsight_lab.results.stored import run_row
from nsight_lab.store.runs import RUN_PAGE
from nsight_lab.text.safe import (
    CSV_LINE_END,
    frame_for_csv,
    frame_for_terminal,
    frame_to_csv,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import BinaryIO, TextIO

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.store.run_store import RunStore

__all__ = ["RunsTable"]

_FIXED = (
    "session_id", "config_index", "run_index", "annotation", "duration_ns",
    "backend", "kernels", "thermal_wait_s", "finished_at",
)  # fmt: skip
"""A run's own columns, before its parameters (:func:`run_row`'s order)."""


class RunsTable:
    """The runs of ``session_ids`` as the export's table, read as it is written.

    Attributes:
        store: The store to read (open while writing).
        session_ids: The sessions, their runs in this order.
        page: Runs read and written at a time (held at once).
    """

    def __init__(
        self, store: RunStore, session_ids: Sequence[int], *, page: int = RUN_PAGE
    ) -> None:
        """Name what to write; nothing is read yet."""
        self.store = store
        self.session_ids = list(session_ids)
        self.page = page

    def columns(self) -> list[str]:
        """The table's columns, as :func:`runs_frame` would order them.

        Raises:
            NotFoundError: No session of one of ``session_ids``.
        """
        params: dict[str, None] = {}
        metrics: dict[str, None] = {}
        telemetry: list[str] | None = None
        for sid in self.session_ids:
            p, m = self.store.run_keys(sid, page=self.page)
            params.update(dict.fromkeys(p))
            metrics.update(dict.fromkeys(m))
            if telemetry is None:
                for records in self.store.run_pages(sid, page=1):
                    telemetry = _telemetry_columns(records[0])
        if telemetry is None:  # no run at all: what an empty frame has
            return []
        return [
            *_FIXED,
            *(f"param_{k}" for k in params),
            "metric",
            *telemetry,
            *(f"metric_{k}" for k in metrics),
        ]

    def chunks(self) -> Iterator[pd.DataFrame]:
        """The table, ``page`` runs at a time, each chunk with every column.

        Raises:
            NotFoundError: No session of one of ``session_ids``.
        """
        columns = self.columns()
        for sid in self.session_ids:
            for records in self.store.run_pages(sid, page=self.page):
                frame = pd.DataFrame([run_row(r) for r in records])
                yield frame.reindex(columns=columns)

    def to_csv(
        self, target: str | os.PathLike[str] | TextIO, *, terminal: bool = False
    ) -> None:
        """Write the table as CSV (formulas neutralised), the header once.

        ``terminal``: cells escaped for a terminal too (shown, not saved).

        Raises:
            NotFoundError: No session of one of ``session_ids``.
            OSError: The target cannot be written.
        """
        if isinstance(target, str | os.PathLike):
            with open(target, "w", newline="", encoding="utf-8") as file:  # noqa: PTH123
                self._write_csv(file, terminal=terminal)
            return
        self._write_csv(target, terminal=terminal)

    def _write_csv(self, file: TextIO, *, terminal: bool) -> None:
        first = True
        for chunk in self.chunks():
            frame = frame_for_csv(frame_for_terminal(chunk) if terminal else chunk)
            frame.to_csv(file, index=False, header=first, lineterminator=CSV_LINE_END)
            first = False
        if first:  # no run: the empty table
            file.write(frame_to_csv(pd.DataFrame()))

    def to_parquet(self, target: str | os.PathLike[str] | BinaryIO) -> None:
        """Write the table as Parquet, one row group per chunk (pyarrow).

        The schema is the first chunk's, a column of no value there typed by the
        first chunk that has one (float for counters and telemetry).

        Raises:
            ImportError: pyarrow is not installed.
            NotFoundError: No session of one of ``session_ids``.
        """
        import pyarrow as pa  # type: ignore[import-untyped]  # noqa: PLC0415
        import pyarrow.parquet as pq  # type: ignore[import-untyped]  # noqa: PLC0415

        writer: Any = None
        schema: Any = None
        try:
            for chunk in self.chunks():
                table = pa.Table.from_pandas(chunk, preserve_index=False)
                if writer is None:
                    schema = pa.schema(
                        [
                            f.with_type(pa.float64()) if pa.types.is_null(f.type) else f
                            for f in table.schema
                        ]
                    ).remove_metadata()
                    writer = pq.ParquetWriter(target, schema)
                writer.write_table(table.cast(schema))
            if writer is None:
                pd.DataFrame().to_parquet(target, index=False)
        finally:
            if writer is not None:
                writer.close()


def _telemetry_columns(record: RunRecord) -> list[str]:
    """The telemetry's columns of :func:`run_row` (fixed by the record type)."""
    return list(telemetry_to_json(record.telemetry))
