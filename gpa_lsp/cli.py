"""`gpa` command line: a thin dispatcher; each subcommand lives in gpa_lsp/commands/."""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import GpaError

# subcommand module -> each exposes add_parser(subparsers) and run(args) -> int
_COMMANDS = ("disasm", "profile", "analyze", "advise", "verify", "diff", "report", "serve", "doctor", "init")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpa", description="GPU performance advisor (GPA method)")
    parser.add_argument("--version", action="version", version=f"gpa-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS:
        importlib.import_module(f"gpa_lsp.commands.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
