"""The ``shiftnet`` console script: a Ctrl-C while the CLI is still importing is quiet.

Why a module of its own: importing the CLI takes tens of milliseconds, and a
Ctrl-C in that time raises ``KeyboardInterrupt`` inside some import, before
the CLI's own handling exists: Python prints a traceback. This module installs
a SIGINT handler that exits 130 (what a shell reports for a command ended by
Ctrl-C) before it imports the CLI, and ``shiftnet.cli.main.main`` puts
Python's usual handler back once its own ``except KeyboardInterrupt`` is in
place. With ``--debug``, or when SIGINT is ignored (a command started in the
background), nothing changes.

It imports only what the interpreter has loaded before any script runs:
``_signal`` is the built-in half of ``signal`` (whose Python half spends
milliseconds building enums, a window of its own).
"""

import _signal
import os
import sys

INTERRUPTED = 130  # 128 + SIGINT


def exit_interrupted(signum: int, frame: object) -> None:
    """End at once with 130: nothing is running yet that would need cleaning up."""
    try:  # noqa: SIM105  (contextlib is one more import to wait for)
        os.write(2, b"\n")  # the shell's prompt then starts on a line of its own, after ^C
    except OSError:
        pass
    os._exit(INTERRUPTED)


def main() -> None:
    """Run ``shiftnet``: quiet about Ctrl-C from here on, then the CLI's own policy."""
    if "--debug" not in sys.argv[1:] and (
        _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
    ):
        _signal.signal(_signal.SIGINT, exit_interrupted)
    from shiftnet.cli.main import main as run_cli  # the slow import, guarded

    sys.exit(run_cli())
