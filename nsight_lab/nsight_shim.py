"""``import nsight`` as nsight-lab: the stand-in for NVIDIA's nsight-python.

Where nsight-python is not installed, :func:`install_nsight_shim` makes ``import
nsight`` a module of nsight-lab's own (``%load_ext nsight_lab`` and every ``%nsight``
line install it): ``nsight.annotate`` is :class:`nsight_lab.regions.annotate`, every
other name comes from :mod:`nsight_lab.api` on first use, and its submodules
(``nsight.collection.ncu``) from :mod:`nsight_lab.nsight_modules`. Where
nsight-python is installed, it stays ``import nsight`` and its ``annotate`` is routed
to nsight-lab's while a profile runs (:func:`nsight_lab.regions.nsight_python_routed`).

A process that runs a cell away from the notebook (the isolated ncu child, each
``--ranks`` rank) calls :func:`prepare_child` first: the magic hands it down as the
cell's :attr:`~nsight_lab.contract.collector.CellCode.prepare`, so the measuring
layers below never import the API.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import TYPE_CHECKING

from nsight_lab.nsight_modules import NSIGHT_PYTHON_VERSION, install_finder
from nsight_lab.regions import annotate

try:
    from nsight_lab._version import __version__
except ImportError:  # a source checkout that was never built
    __version__ = "0.0.0+unknown"

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["install_nsight_shim", "nsight_shim", "prepare_child"]


class _NsightShim(types.ModuleType):
    """``nsight`` where nsight-python is absent: nsight-python's API, as nsight-lab's.

    ``annotate`` is here at once; every other name (``analyze``, ``experimental``,
    ...) is imported from :mod:`nsight_lab.api` on first use, so ``%load_ext`` loads
    no pandas for it.
    """

    __nsight_lab_shim__ = True

    def __reduce__(self) -> tuple[Callable[[], types.ModuleType], tuple[()]]:
        """Pickle by reference: unpickled, it is that process's ``nsight`` stand-in.

        A user's function that reads ``nsight`` (``nsight.annotate``) ships to the
        isolated ncu child with the module in its globals; cloudpickle would copy a
        module without a spec by value, which a ModuleType subclass refuses. The
        child installs the same stand-in before it unpickles (:func:`prepare_child`).
        """
        return nsight_shim, ()

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # the import system's and pickle's questions
            raise AttributeError(name)
        api = importlib.import_module("nsight_lab.api")
        try:
            value: object = getattr(api, name)
        except AttributeError:
            msg = (
                f"module 'nsight' (nsight-lab's stand-in for nsight-python) has no "
                f"attribute {name!r}"
            )
            raise AttributeError(msg) from None
        setattr(self, name, value)
        return value


def nsight_shim() -> types.ModuleType:
    """This process's ``nsight`` stand-in (what a pickled stand-in unpickles to).

    The one ``import nsight`` resolves to where it is installed; else it is
    installed where nsight-python is absent; else (nsight-python is there and stays
    ``nsight``) a stand-in of its own, outside ``sys.modules``.
    """
    module = sys.modules.get("nsight")
    if module is None:
        install_nsight_shim()
        module = sys.modules.get("nsight")
    if module is not None and getattr(module, "__nsight_lab_shim__", False):
        return module
    return _new_shim()


def _new_shim() -> _NsightShim:
    """A stand-in: a package (``nsight.collection.ncu`` ...) of nsight-python 1.1.0.

    ``__version__`` is the nsight-python version whose API it serves;
    ``__nsight_lab_version__`` nsight-lab's own.
    """
    install_finder()
    shim = _NsightShim(
        "nsight", "nsight-lab's stand-in for nsight-python (nsight_lab.api)"
    )
    shim.__path__ = []  # a package: its submodules come from NsightModuleFinder
    shim.__version__ = NSIGHT_PYTHON_VERSION  # type: ignore[attr-defined]
    shim.__nsight_lab_version__ = __version__  # type: ignore[attr-defined]
    shim.annotate = annotate  # type: ignore[attr-defined]
    return shim


def install_nsight_shim(*, replace: bool = False) -> None:
    """Make ``import nsight`` resolve to nsight-lab's nsight-python API.

    Args:
        replace: Install the stand-in even where NVIDIA's nsight-python is installed
            (the isolated child, which must not start nsight-python's ncu probe, and
            the examples harness); otherwise only where it is absent.
    """
    if not replace and (
        "nsight" in sys.modules or importlib.util.find_spec("nsight") is not None
    ):
        return
    sys.modules["nsight"] = _new_shim()


def prepare_child() -> None:
    """Make ``import nsight`` nsight-lab's stand-in in a process that runs a cell.

    Also where nsight-python is installed: there its import would start its own ncu
    probe under ncu, and its ``annotate`` would mark nothing for nsight-lab. The
    isolated ncu child calls it before it unpickles the cell's variables (a shipped
    ``nsight`` is then this stand-in), each ``--ranks`` rank before it runs the cell.
    """
    install_nsight_shim(replace=True)
