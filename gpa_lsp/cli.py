"""`gpa` command line: a thin dispatcher; each subcommand lives in gpa_lsp/commands/."""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import GpaError

# subcommand module -> each exposes add_parser(subparsers) and run(args) -> int
_COMMANDS = ("disasm", "profile", "analyze", "advise", "verify", "diff", "report", "serve", "doctor", "init")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every subcommand's parser, or only ``only``'s: each module imports what its command needs
    (``profile`` the collector, ``analyze`` the SASS analysis...), and importing all ten cost
    ``gpa profile`` about 0.1 s of start-up for commands it does not run (issue 17)."""
    parser = argparse.ArgumentParser(prog="gpa", description="GPU performance advisor (GPA method)")
    parser.add_argument("--version", action="version", version=f"gpa-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS if only is None else (only,):
        importlib.import_module(f"gpa_lsp.commands.{name}").add_parser(sub)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names, when it is its first argument (gpa's own options come first
    only as --help and --version, which need every parser)."""
    return argv[0] if argv and argv[0] in _COMMANDS else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GpaError as exc:
        where = getattr(exc, "path", None)      # ConfigError: the file (and line) at fault
        if where and getattr(exc, "line", None):
            where = f"{where}:{exc.line}"
        print(f"gpa: error: {where + ': ' if where else ''}{exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"gpa: hint: {exc.hint}", file=sys.stderr)
        output = getattr(exc, "output", "") or getattr(exc, "output_tail", "")
        if output:
            print(output.rstrip(), file=sys.stderr)
        return 2
    except OSError as exc:      # the disk or the system, not a bug: a message, not a traceback
        print(f"gpa: error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
