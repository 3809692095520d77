"""``python -m nsight_lab.options [--markdown]``: print the help or the README table."""

import sys

from nsight_lab.options.help import main

sys.exit(main())
