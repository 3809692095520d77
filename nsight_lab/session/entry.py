"""The one entry that runs a prepared profile into the store, for every caller.

The magic (:mod:`.notebook`) and nsight-python's API (:mod:`nsight_lab.api.kernel`)
both :func:`~.prepare.prepare` a profile, build their cell and request from its plan,
and hand them here: a rank that only follows rank 0 stores nothing, every other
profile opens the store and runs (:func:`~.profiling.profile`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.distributed import follows
from nsight_lab.session.profiling import profile
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.contract.collector import CellCode
    from nsight_lab.session.prepare import Prepared
    from nsight_lab.session.request import Profiled, ProfileRequest

__all__ = ["run"]


def run(
    prepared: Prepared,
    cell: CellCode,
    request: ProfileRequest,
    *,
    on_session: Callable[[int], None] | None = None,
) -> Profiled | None:
    """Run ``cell`` as ``prepared`` says, into a new session of the store.

    Args:
        prepared: The plan and its collector.
        cell: The cell (or function) to measure.
        request: What the results and the views are asked for.
        on_session: Told the session id as soon as the collector opened it.

    Returns:
        The finished profile; ``None`` on a rank of the kernel's group other than 0,
        which timed the cell for rank 0 and stores nothing.

    Raises:
        NsightLabError: As :func:`~.profiling.profile`.
        BaseException: Whatever the cell raised, after the finished runs were stored.
    """
    if prepared.over_ranks and follows(prepared.plan, cell):
        return None
    with RunStore() as store:
        return profile(
            prepared.plan,
            cell,
            collector=prepared.collector,
            store=store,
            request=request,
            on_session=on_session,
        )
