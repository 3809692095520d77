"""The nsight-lab exception tree.

Every error a user can cause or fix derives from :class:`NsightLabError`. The magic and
the CLI catch it and print its message as one line; anything else is a bug or an
exception from the user's own code and propagates unchanged.
"""

from __future__ import annotations


class NsightLabError(Exception):
    """Base class of every error nsight-lab raises on purpose."""


class OptionError(NsightLabError, ValueError):
    """A magic option or CLI argument is malformed; the message names it."""


class CommandError(NsightLabError, ValueError):
    """A ``nsight-lab`` or ``%nsight`` command line is malformed; the message says how.

    Raised by the commands' parser (:mod:`nsight_lab.cli.parser`) and the commands.
    """


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
