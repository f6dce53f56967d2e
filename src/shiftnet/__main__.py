"""``python -m shiftnet``: the same as the ``shiftnet`` command (used to start children)."""

from shiftnet.entry_point import main

main()
