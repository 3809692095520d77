"""The nsight-lab exception tree.

Every error a user can cause or fix derives from :class:`NsightLabError`. The magic and
the CLI catch it and print its message as one line; anything else is a bug or an
exception from the user's own code and propagates unchanged.
"""

from __future__ import annotations


class NsightLabError(Exception):
    """Base class of every error nsight-lab raises on purpose."""


class InputError(NsightLabError, ValueError):
    """Something the user gave is malformed or asks for what cannot be done.

    The message names it and says what to do. Each source of input raises its own
    subclass; callers that only show the message (the magic, the CLI) or answer 400
    (the server) catch this one.
    """


class OptionError(InputError):
    """A ``%%nsight`` option or an ``analyze.kernel`` keyword is malformed.

    Raised only by :mod:`nsight_lab.options`, where every option check lives.
    """


class CommandError(InputError):
    """A ``nsight-lab`` or ``%nsight`` command line is malformed; the message says how.

    Raised by the commands' parser (:mod:`nsight_lab.cli.parser`) and the commands.
    """


class RequestError(InputError):
    """A REST request's argument is malformed (the server answers 400)."""


class ArgumentError(InputError):
    """An argument of nsight-python's API (``activate``, ``use_backend``) is wrong."""


class PlanError(InputError):
    """The options ask for what no backend here can do.

    Raised by the plan, a backend's own check of its metrics, and the ranks' check.
    """


class CellError(InputError):
    """The cell (or decorated function) cannot be profiled as written.

    A lone surrogate, a config name of an earlier cell read unbound, an empty region
    name, ``--normalize-against`` naming no region of the cell, a derive function
    whose signature does not fit the metrics.
    """


class OutputError(InputError):
    """Files asked for (``--output-csv``, ``output_prefix``) cannot be written there."""


class QueryError(InputError):
    """A filter of the stored sessions (a time, a status, a limit) is malformed."""


class BaselineError(InputError):
    """A baseline name is malformed or names no baseline; the message lists them."""


class BackendUnavailableError(NsightLabError, RuntimeError):
    """The requested backend cannot run here; the message says why and what to do."""


class MeasurementError(NsightLabError, RuntimeError):
    """A measurement could not be taken (bad regions, GPU stack failure)."""


class RegionError(MeasurementError, ValueError):
    """Regions were nested, repeated in one run, or left open.

    Also a ``ValueError``: nsight-python raises one for a nested or repeated
    annotation, and code written for it catches that.
    """


class StoreError(NsightLabError, RuntimeError):
    """The run store could not be opened, read or written."""


class NotFoundError(StoreError, LookupError):
    """A session id that is not in the store."""


class ThermalControlError(NsightLabError, RuntimeError):
    """The GPU's thermal state kept the profile from going on (nsight-python's)."""


class CoolingTimeoutError(ThermalControlError):
    """The GPU did not cool to the resume threshold within the timeout."""
