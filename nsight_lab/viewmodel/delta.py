"""Live view deltas: what a session's view gained since the version a client holds.

Issue 32: the live view re-sent the whole view on every refresh (0.35 MB for one
region, 0.9 MB for four, five times a second, to every open panel). A served view
now carries ``view_version`` (``"<epoch>:<version>"``: the view model it came from,
made once per model, and that model's version); a client that asks again with
``since=<view_version>`` gets only what changed, as ``delta``:

- ``charts``: chart name -> change. A chart drawn run by run (duration, clocks,
  per-rank durations: :class:`~nsight_lab.figures.LiveFigures`) gets the new
  traces and points, :meth:`LiveFigures.add`'s appends of every version since
  merged (:func:`merge_appends`: per trace and path the points in order, at most
  ``max_points``), and ``layout`` (its whole layout, merged one level deep as
  ``src/charts/append.ts``'s ``mergeLayout`` does) when that changed. Any other
  chart, one that was capped, one that appeared since, or one whose layout lost a
  key is ``{"figure": ...}``, drawn whole; ``null`` is a chart gone.
- ``summary``: ``{"length", "rows": {index: row}}``, the rows that changed.
- ``tables``: key -> value, every other key of the view that changed
  (``chart_order``, ``counters``, ``checks``, ``kernels``, ``verdicts``), whole.

:func:`apply_delta` (and ``applyViewDelta`` in ``src/model/view.ts``) applied to
the view at ``since`` gives the view at ``view_version``, equal to a fresh full
view. The server answers the full view instead when it cannot say what changed:
``since`` of another model (evicted, the server restarted), or older than the
appends it keeps (:data:`LOG_POINTS`; a panel that missed refreshes).

A delta costs the points appended since ``since`` (at most ``max_points`` per
trace) and the rows that changed: bounded by the refresh interval and the regions,
never by the session's runs. The inline widget keeps the same log of its appends
(:class:`AppendLog`) to answer a view that missed some.
"""

from __future__ import annotations

import copy
import math
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson

from nsight_lab.viewmodel.appends import (
    LOG_POINTS,
    AppendLog,
    Change,
    apply_appends,
    merge_appends,
)
from nsight_lab.viewmodel.capped import capped
from nsight_lab.viewmodel.encode import dumps_bytes

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.viewmodel.session import SessionViewModel

__all__ = [
    "LOG_POINTS",
    "AppendLog",
    "ViewLog",
    "apply_appends",
    "apply_delta",
    "merge_appends",
    "new_epoch",
    "parse_version",
    "snapshot",
]

_OWN = frozenset({"figures", "summary"})
"""The view's parts sent piecewise; every other key is sent whole when it changed."""
_LIVE = b"live"
_WHOLE = b"whole"


def new_epoch() -> str:
    """A new model's epoch: what tells its versions from another model's."""
    return uuid.uuid4().hex[:12]


def parse_version(token: str) -> tuple[str, int] | None:
    """``(epoch, version)`` of a ``view_version`` token; None when malformed."""
    epoch, sep, version = token.partition(":")
    if not sep or not epoch.isalnum() or not version.isdigit() or len(version) > 18:  # noqa: PLR2004
        return None
    return epoch, int(version)


def _lost_key(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether merging ``new`` into ``old`` would keep something ``new`` lacks."""
    for key, value in old.items():
        if key not in new:
            return True
        if isinstance(value, dict):
            other = new[key]
            if not isinstance(other, dict) or not value.keys() <= other.keys():
                return True
    return False


def apply_delta(view: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """The view ``delta`` leads to from ``view`` (a new dict; ``view`` is unchanged).

    Raises:
        KeyError: The delta extends a chart the view lacks (it was not made from it).
    """
    out = copy.deepcopy(dict(view))
    figures = out.setdefault("figures", {})
    for name, change in (delta.get("charts") or {}).items():
        if change is None:
            figures.pop(name, None)
        elif "figure" in change:
            figures[name] = copy.deepcopy(change["figure"])
        else:
            apply_appends(figures[name], change)
    summary = delta.get("summary")
    if summary is not None:
        rows = list(out.get("summary") or [])[: summary["length"]]
        rows += [{}] * (summary["length"] - len(rows))
        for index, row in summary["rows"].items():
            rows[int(index)] = copy.deepcopy(row)
        out["summary"] = rows
    for key, value in (delta.get("tables") or {}).items():
        out[key] = copy.deepcopy(value)
    return out


def snapshot(figure: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a live figure that later appends leave as it is.

    Appends extend the live figure's lists in place (and replace its layout's
    keys): its traces and their lists are copied, the values shared.
    """
    traces = []
    for trace in figure.get("data") or ():
        copied = {k: list(v) if isinstance(v, list) else v for k, v in trace.items()}
        marker = copied.get("marker")
        if isinstance(marker, dict):
            copied["marker"] = {
                k: list(v) if isinstance(v, list) else v for k, v in marker.items()
            }
        traces.append(copied)
    out = {**figure, "data": traces}
    if isinstance(figure.get("layout"), dict):
        out["layout"] = dict(figure["layout"])
    return out


class ViewLog:
    """One model's deltas: its appends, and when each other part of its view changed.

    Each view served is :meth:`observe`'d (once per version): a part (a table, a
    summary row, a whole chart, a live chart's layout) that differs from the last
    view observed is marked changed at that version. A delta since ``s`` sends
    the parts changed after ``s``, and the appends after ``s``.

    Thread-safe on its own (issue 32): answers take the log's lock, never the
    model's, so a refresh of a followed session does not wait while the follower
    adds runs or builds the next view (p99 1.7-2.1 s of server time with 20 panels,
    most of it waiting for that lock); :meth:`publish` builds the view with the
    model's lock held and takes the log's only to swap it in.
    """

    def __init__(self, epoch: str | None = None, budget: int | None = None) -> None:
        """Start empty; ``epoch`` names the model (a new one by default)."""
        self.epoch = epoch or new_epoch()
        self.appends = AppendLog(budget)
        self.published_at = -math.inf
        """``time.monotonic()`` of the last :meth:`publish` that built a view."""
        self.publish_s = 0.0
        """The CPU time that build took (the follower spaces builds by it): not its
        wall time, which on a loaded machine is mostly waiting for a core or the
        GIL (issue 32: builds spaced by wall time came seconds apart under load,
        and each refresh's delta then carried seconds of points, or none)."""
        self._parts: dict[str, bytes] = {}
        self._changed: dict[str, int] = {}
        self._lost: dict[str, int] = {}
        self._observed = -1
        self._served: tuple[int, dict[str, Any]] = (-1, {})
        self._answers: dict[str | None, dict[str, Any]] = {}
        self._encoded: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def token(self, version: int) -> str:
        """The ``view_version`` of ``version``."""
        return f"{self.epoch}:{version}"

    @property
    def published(self) -> bool:
        """Whether a view was published (what :meth:`answer` answers from)."""
        return self._served[0] >= 0

    def publish(self, model: SessionViewModel, left_out: tuple[int, int]) -> None:
        """Build ``model``'s view (its lock held), once per version: what is served.

        :func:`~nsight_lab.viewmodel.capped.capped` (``left_out``: the duration
        chart's groups not drawn), :meth:`observe`'d, its live charts copied
        (:func:`snapshot`: the model's appends after this do not reach it).
        """
        version = model.version
        if self._served[0] == version:
            return
        started = time.thread_time()
        view = model.to_json()
        figures = capped(view["figures"], left_out={"duration": left_out})
        if figures is not view["figures"]:
            view = {**view, "figures": figures}
        live = {name: fig["data"] for name, fig in model.live.figures.items()}
        parts = _parts(view, live)  # encoded outside the log's lock
        copied = {
            name: snapshot(fig) if live.get(name) is fig.get("data") else fig
            for name, fig in figures.items()
        }
        token = self.token(version)
        served = {**view, "figures": copied, "view_version": token}
        with self._lock:
            self._note(version, parts)
            self._served = (version, served)
            self._answers.clear()
            self._encoded.clear()
        self.published_at = time.monotonic()
        self.publish_s = time.thread_time() - started

    def answer(self, since: str | None) -> dict[str, Any]:
        """The published view, or ``{"view_version", "delta"}`` since ``since``.

        The delta when ``since`` is a version of this model the log can answer
        from; the full view otherwise. Call :meth:`publish` first. Each answer is
        made once per published version (panels that refresh together share it).
        """
        with self._lock:
            return self._answer(since)[0]

    def answer_bytes(self, since: str | None) -> bytes:
        """:meth:`answer` as JSON, encoded once per published version and ``since``."""
        with self._lock:
            answer, key = self._answer(since)
            encoded = self._encoded.get(key)
            if encoded is None:
                encoded = self._encoded[key] = dumps_bytes(answer)
            return encoded

    def record(self, version: int, appends: Mapping[str, Change]) -> None:
        """:meth:`AppendLog.record` under the log's lock (the model's runs added)."""
        with self._lock:
            self.appends.record(version, appends)

    def reset(self, version: int) -> None:
        """:meth:`AppendLog.reset` under the log's lock."""
        with self._lock:
            self.appends.reset(version)

    def _answer(self, since: str | None) -> tuple[dict[str, Any], str]:
        version, full = self._served
        if since in self._answers:
            return self._answers[since], since or ""
        held = parse_version(since) if since else None
        if held is not None and held[0] == self.epoch:
            delta = self.delta(held[1], version, full)
            if delta is not None:
                answer = {"view_version": full["view_version"], "delta": delta}
                self._answers[since] = answer
                return answer, since or ""
        return full, ""

    def observe(
        self, version: int, view: Mapping[str, Any], live: Mapping[str, object]
    ) -> None:
        """Note what changed in ``view`` (the one served at ``version``).

        ``live``: chart name -> the data list its live figure extends; a figure
        whose ``data`` is that list is a live chart (sent as appends).
        """
        if version == self._observed:
            return
        parts = _parts(view, live)
        with self._lock:
            self._note(version, parts)

    def _note(self, version: int, parts: dict[str, bytes]) -> None:
        """Mark the parts that differ from the last observed as changed (lock held)."""
        if version == self._observed:
            return
        for key, kind in parts.items():
            if not key.startswith("k:"):
                continue
            name = key[2:]
            old = self._parts.get(f"l:{name}")
            if kind == _LIVE and old is not None and old != parts[f"l:{name}"]:
                before = _loads(old)
                new_rest = _loads(parts[f"l:{name}"])
                layouts = before.pop("layout", {}), new_rest.pop("layout", {})
                if before != new_rest or _lost_key(*layouts):
                    self._lost[name] = version
        for key in sorted(self._parts.keys() | parts.keys()):
            if self._parts.get(key) != parts.get(key):
                self._changed[key] = version
        self._parts = parts
        self._observed = version

    def delta(
        self, since: int, version: int, view: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """What changed from ``since`` to ``version`` (observed); None if unknown.

        ``view`` is the one observed at ``version``, its live charts snapshots.
        """
        if version != self._observed:
            return None
        appends = self.appends.since(since, version)
        if appends is None:
            return None
        after = self._changed
        out: dict[str, Any] = {"charts": {}}
        figures = view.get("figures") or {}
        gone = {k[2:] for k in after if k.startswith("k:") and after[k] > since}
        for name in sorted(gone - figures.keys()):
            out["charts"][name] = None
        for name, figure in figures.items():
            change = self._chart(name, figure, since, appends)
            if change is not None:
                out["charts"][name] = change
        if after.get("n:summary", 0) > since or any(
            k.startswith("r:") and v > since for k, v in after.items()
        ):
            rows = view.get("summary") or []
            out["summary"] = {
                "length": len(rows),
                "rows": {
                    str(i): row
                    for i, row in enumerate(rows)
                    if after.get(f"r:{i}", 0) > since
                },
            }
        tables = {  # in the view's order (a key gone is sent as null)
            key: view.get(key)
            for key in (*view, *(k[2:] for k in after if k.startswith("t:")))
            if key not in _OWN and after.get(f"t:{key}", 0) > since
        }
        if tables:
            out["tables"] = tables
        return out

    def _chart(
        self,
        name: str,
        figure: Mapping[str, Any],
        since: int,
        appends: Mapping[str, Change],
    ) -> Change | None:
        after = self._changed
        if after.get(f"k:{name}", 0) > since or self._lost.get(name, 0) > since:
            return {"figure": figure}
        if self._parts.get(f"k:{name}") == _WHOLE:
            return {"figure": figure} if after.get(f"f:{name}", 0) > since else None
        change = appends.get(name)
        if change is not None and "figure" in change:
            return {"figure": figure}
        out: Change = {}
        if change is not None:
            out = {k: v for k, v in change.items() if k != "layout"}
        if after.get(f"l:{name}", 0) > since:
            out["layout"] = figure.get("layout") or {}
        return out or None


def _parts(view: Mapping[str, Any], live: Mapping[str, object]) -> dict[str, bytes]:
    """Each part of ``view`` as encoded (what :meth:`ViewLog.observe` compares).

    ``t:`` a table, ``n:summary`` the summary's length, ``r:`` a summary row, ``k:``
    a chart's kind (live or whole), ``l:`` a live chart without its data, ``f:`` a
    whole chart.
    """
    parts = {
        f"t:{key}": dumps_bytes(value) for key, value in view.items() if key not in _OWN
    }
    rows = view.get("summary") or []
    parts["n:summary"] = str(len(rows)).encode()
    for index, row in enumerate(rows):
        parts[f"r:{index}"] = dumps_bytes(row)
    for name, figure in (view.get("figures") or {}).items():
        is_live = live.get(name) is figure.get("data")
        parts[f"k:{name}"] = _LIVE if is_live else _WHOLE
        rest = {k: v for k, v in figure.items() if k != "data"}
        parts[f"l:{name}" if is_live else f"f:{name}"] = dumps_bytes(
            rest if is_live else figure
        )
    return parts


def _loads(raw: bytes) -> dict[str, Any]:
    value = orjson.loads(raw)
    return value if isinstance(value, dict) else {}
