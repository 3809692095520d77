"""The ``nsight-lab`` command and the store reports it shares with ``%nsight``.

``parser.py`` is the one definition of the commands (the ``%nsight`` line magic
parses its line with it too: ``line.py``); ``main.py`` runs them; ``doctor.py``,
``history.py`` and ``reports.py`` are the tables both show.
"""

from nsight_lab.cli.main import EXIT_USAGE, main
from nsight_lab.cli.parser import EXIT_REGRESSION

__all__ = ["EXIT_REGRESSION", "EXIT_USAGE", "main"]
