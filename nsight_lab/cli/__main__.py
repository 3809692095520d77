"""``python -m nsight_lab.cli``: the ``nsight-lab`` command."""

from nsight_lab.cli.main import main

raise SystemExit(main())
