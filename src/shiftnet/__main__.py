"""``python -m shiftnet``: the same as the ``shiftnet`` command (used to start children)."""

import sys

from shiftnet.cli.main import main

sys.exit(main())
