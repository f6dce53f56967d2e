"""Entry point of the ``shiftnet`` command: global flags, sub-command registry, error policy.

Adding a sub-command is a one-line edit: put its module in :data:`SUBCOMMANDS`.
The module exposes ``register(subparsers)``, which adds its parser and sets
``func=<callable(args) -> int>`` as the parser default. See ``docs/cli.md``.

Error policy (the same for every sub-command): a :class:`ShiftnetError` prints
one sentence on stderr and exits 1; Ctrl-C exits 130; tracebacks only with
``--debug``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from collections.abc import Sequence

from shiftnet.cli import interrupts
from shiftnet.cli.settings import resolve_settings
from shiftnet.errors import ShiftnetError, shorten
from shiftnet.private_files import ensure_private_tree

# One line per sub-command module; each exposes ``register(subparsers)``. Name the
# module after its command (``shiftnet.cli.router`` registers ``router``): then
# ``shiftnet router ...`` imports only that module, which keeps start-up quick.
SUBCOMMANDS: tuple[str, ...] = (
    "shiftnet.cli.apply",
    "shiftnet.cli.get",
    "shiftnet.cli.describe",
    "shiftnet.cli.delete",
    "shiftnet.cli.logs",
    "shiftnet.cli.node",
    "shiftnet.cli.master",
    "shiftnet.cli.up",
    "shiftnet.cli.dns",
    "shiftnet.cli.proxy",
    "shiftnet.cli.router",
    "shiftnet.cli.lab",
    "shiftnet.cli.apiserver",
    "shiftnet.cli.diagnose",
)

log = logging.getLogger(__name__)


_GLOBAL_OPTIONS_WITH_VALUE = ("--store", "--state-dir", "--kubeconfig")


def command_word(argv: Sequence[str]) -> str | None:
    """The sub-command the user typed (first word that is not a global option)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in _GLOBAL_OPTIONS_WITH_VALUE:
            skip = True
            continue
        if word.startswith("-"):
            continue
        return word
    return None


def modules_for(argv: Sequence[str] | None) -> tuple[str, ...]:
    """Only the named command's module when it follows the naming rule, else all of them."""
    word = command_word(argv) if argv is not None else None
    chosen = tuple(m for m in SUBCOMMANDS if word and m.rsplit(".", 1)[1] == word)
    return chosen or SUBCOMMANDS


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; given ``argv``, only the sub-command it names is loaded."""
    parser = argparse.ArgumentParser(
        prog="shiftnet",
        description="OpenShift-style cluster networking on your own machine: "
        "Routes through HAProxy, Services, cluster DNS and an SDN, all watching one store.",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="cluster store: sqlite:///path/state.db, etcd://host:port[,host:port] or "
        "kube:///path/kubeconfig (a Kubernetes API) "
        "(env SHIFTNET_STORE; default sqlite under the state directory)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="use the Kubernetes API this kubeconfig names as the store "
        "(same as --store kube://PATH)",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where shiftnet keeps its files (env SHIFTNET_HOME; default ~/.shiftnet)",
    )
    parser.add_argument(
        "--debug", action="store_true", help="debug logging and full tracebacks on errors"
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module_name in modules_for(argv):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name != module_name:
                raise  # the module exists but something it imports is missing: a real bug
            log.debug("subcommand=%s skipped: module not found", module_name)
            continue
        module.register(sub)
    return parser


def _setup_logging(verbose: int, debug: bool) -> None:
    level = logging.WARNING
    if verbose == 1:
        level = logging.INFO
    if verbose >= 2 or debug:
        level = logging.DEBUG
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )


def _sentence(text: str) -> str:
    """One line, starting with "error: " like kubectl."""
    text = " ".join(str(text).split())
    return f"error: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``shiftnet``; returns the exit status (also used by the console script)."""
    words = list(argv if argv is not None else sys.argv[1:])
    debug = "--debug" in words
    try:
        parser = build_parser(words)
        args = parser.parse_args(words)
        _setup_logging(args.verbose, args.debug)
        settings = resolve_settings(args.store, args.state_dir, os.environ, args.kubeconfig)
        args.store = settings.store_url
        args.state_dir = settings.state_dir
        if settings.state_dir.is_dir():
            # Keys and the store live there; an older version left it readable by all.
            ensure_private_tree(settings.state_dir)
        # Children (pods, router, proxies started by `shiftnet up`) see the same cluster.
        os.environ["SHIFTNET_HOME"] = str(settings.state_dir)
        os.environ["SHIFTNET_STORE"] = settings.store_url
        _interrupts_raise()  # imports done: from here a Ctrl-C lets the command clean up
        code = args.func(args)
        return int(code or 0)
    except KeyboardInterrupt:
        if debug:
            raise
        print("", file=sys.stderr)
        return 130
    except ShiftnetError as err:
        if debug:
            raise
        print(_sentence(str(err)), file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:
        # `shiftnet get pods | head`: the reader went away; that is not an error.
        _silence_stdout()
        return 0
    except Exception as err:  # the last boundary before the user
        # A defect, not bad input: one line and a way to see more, never a traceback.
        if debug:
            raise
        detail = shorten(str(err)) or "no message"
        print(
            _sentence(
                f"internal error ({type(err).__name__}: {detail}); "
                "run again with --debug for the traceback"
            ),
            file=sys.stderr,
        )
        return 1


def _interrupts_raise() -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` again, now that the command is about to run.

    The console script (``shiftnet.entry_point``) makes Ctrl-C exit at once
    while the CLI and the sub-command's modules import: an interrupt inside an
    import can surface as another error (a compiled extension's panic), and
    nothing needs cleaning up yet. Once the command runs, its clean-up must run.
    """
    handler = signal.getsignal(signal.SIGINT)
    if getattr(handler, "__module__", None) == "shiftnet.entry_point":
        interrupts.install()


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
