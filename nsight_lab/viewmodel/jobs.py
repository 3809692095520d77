"""What the server's child processes run: each opens the store and answers JSON text.

Module-level functions with plain arguments (they are pickled to a child process of
:class:`nsight_lab.server.workers.Workers`): a large page of runs and a comparison.
Light to import (the server names these functions); the comparison's code loads in
the child.
"""

from __future__ import annotations

from typing import Any

from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel.encode import dumps
from nsight_lab.viewmodel.pages import session_page

__all__ = ["compare_json", "page_json", "page_of"]


def page_of(  # noqa: PLR0913, PLR0917  (pickled positional arguments)
    path: str,
    read_only: bool,  # noqa: FBT001
    session_id: int,
    after_id: int,
    limit: int,
    tail: int,
) -> dict[str, Any]:
    """Return one page of a session's runs (:func:`.pages.session_page`).

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    with RunStore(path, read_only=read_only) as store:
        return session_page(store, session_id, after_id, limit, tail)


def page_json(  # noqa: PLR0913, PLR0917  (pickled positional arguments)
    path: str,
    read_only: bool,  # noqa: FBT001
    session_id: int,
    after_id: int,
    limit: int,
    tail: int,
) -> str:
    """Return one page of a session's runs as JSON text.

    Raises:
        NotFoundError: No such session.
        StoreError: The store cannot be read.
    """
    return dumps(page_of(path, read_only, session_id, after_id, limit, tail))


def compare_json(
    path: str,
    read_only: bool,  # noqa: FBT001
    a: int,
    b: int,
    threshold: float = 0.0,
) -> str:
    """Return the ``GET compare`` body of sessions ``a`` and ``b`` as JSON text.

    Raises:
        NotFoundError: Either session is unknown.
        StoreError: The store cannot be read.
    """
    from nsight_lab.viewmodel.compare import (  # noqa: PLC0415  (numpy: in a child; the server starts light)
        compare_payload,
    )

    with RunStore(path, read_only=read_only) as store:
        return dumps(compare_payload(store, a, b, threshold))
