"""The ``nsight-lab`` command and the store reports it shares with ``%nsight``.

``main.py`` parses and runs the commands; ``doctor.py`` and ``history.py`` are the
reports behind ``nsight-lab doctor`` / ``history`` and ``%nsight doctor`` / ``history``.
"""

from nsight_lab.cli.main import EXIT_REGRESSION, EXIT_USAGE, main

__all__ = ["EXIT_REGRESSION", "EXIT_USAGE", "main"]
