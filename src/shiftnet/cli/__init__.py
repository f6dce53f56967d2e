"""The ``shiftnet`` command. Thin: parse flags, call the library, print results.

Sub-commands live one per module and are listed in :data:`shiftnet.cli.main.SUBCOMMANDS`.
"""
