"""`gpa serve`: run the language server (stdio, or --tcp HOST:PORT for debugging)."""

from __future__ import annotations


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the gpa-lsp language server (stdio by default)")
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (for debugging)")
    p.add_argument("--log-level", default="WARNING")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..server.server import main  # deferred: `gpa` imports every command module to build its parser

    argv = ["--log-level", args.log_level]
    if args.tcp:
        argv += ["--tcp", args.tcp]
    return main(argv)
