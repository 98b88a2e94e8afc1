"""`gpa analyze BUNDLE`: the advisor's report for a recorded profile bundle."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import find_config
from ..errors import BundleError, ConfigError, GpaError
from ..profile.collect import NO_LINE_INFO_HINT


def parse_source_map(items) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items or ():
        old, sep, new = item.partition("=")
        if not sep or not old:
            raise ConfigError(f"--source-root {item!r} is not OLD=NEW", "e.g. --source-root /build/src=.")
        out.append((old, new))
    return tuple(out)


def add_report_arguments(p) -> None:
    """The options `analyze` and `advise` share: path mapping, output format, kernel filter (see ``emit``)."""
    p.add_argument("--source-root", action="append", metavar="OLD=NEW", default=[],
                   help="map source paths recorded at build time (repeatable)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", metavar="FILE", help="write the report as JSON ('-' for stdout)")
    fmt.add_argument("--sarif", metavar="FILE", help="write the report as SARIF 2.1.0 ('-' for stdout)")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel (mangled, demangled or a substring)")
    p.add_argument("--srcroot", metavar="DIR",
                   help="SARIF: the folder file URIs are relative to (%%SRCROOT%%; default: the git work "
                        "tree of the current folder, else the current folder)")
    if "--top" not in p._option_string_actions:    # `gpa verify` defines it: the fixes to try, and shown
        p.add_argument("--top", type=_count, metavar="N",
                       help="at most N advice per kernel (every format; with --verify also the fixes to try)")
    p.add_argument("--min-speedup", type=_speedup, metavar="X",
                   help="only advice estimated at X or more, e.g. 1.05 (every format)")


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return n


def _speedup(text: str) -> float:
    try:
        x = float(text.rstrip("xX"))
    except ValueError:
        x = 0.0
    if not x >= 1.0 or x == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a speedup of at least 1.0 (e.g. 1.05)")
    return x


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="analyse a recorded profile bundle and print ranked advice")
    p.add_argument("bundle", help="a .gpabundle recorded by `gpa profile`")
    add_report_arguments(p)
    p.set_defaults(func=run)


def emit(report, args, reader=None, config_file=None) -> int:
    """Print or write ``report`` as ``args`` ask; ``config_file``: the project's gpa.toml (SARIF's
    build-flag fixes edit it)."""
    # deferred: `gpa` imports every command module to build its parser
    from ..analysis.report import json_text, render_text, to_json_report, to_sarif
    from ..analysis.text_report import select

    for problem in report.problems:      # e.g. a damaged cubin: the other kernels are still reported
        print(f"gpa: warning: {problem}", file=sys.stderr)
    top, floor = getattr(args, "top", None), getattr(args, "min_speedup", None)
    note = no_line_info_note(report)
    if note:
        print(f"gpa: note: {note}", file=sys.stderr)
    if args.json or args.sarif:
        report = select(report, kernel=args.kernel, top=top, min_speedup=floor)
        data = to_json_report(report, kernel=args.kernel) if args.json else to_sarif(
            report, kernel=args.kernel, srcroot=getattr(args, "srcroot", None), reader=reader,
            config_file=str(config_file) if config_file else None)
        text = json_text(data)
        target = args.json or args.sarif
        if target == "-":
            sys.stdout.write(text + "\n")
        else:
            try:
                Path(target).write_text(text + "\n", encoding="utf-8")
            except OSError as exc:
                raise GpaError(f"cannot write {target}: {exc.strerror}",
                               "check that its folder exists and is writable, or pass '-' for stdout") from None
        return 0
    sys.stdout.write(render_text(report, reader=reader, kernel=args.kernel, top=top, min_speedup=floor))
    return 0


def no_line_info_note(report) -> str | None:
    """Sampled kernels none of whose instructions has a source line (cubins built without -lineinfo)."""
    bare = [k.demangled or k.name for k in report.kernels if k.samples and k.file is None and not k.lines]
    if not bare:
        return None
    return (f"the profiled cubins of {len(bare)} kernel(s) carry no line information ({', '.join(bare[:4])}"
            f"{' ...' if len(bare) > 4 else ''}): the advice cannot point at source lines. {NO_LINE_INFO_HINT}")


def run(args) -> int:
    from ..analysis.advisor import advise_bundle  # deferred: `gpa` imports every command module to build its parser

    if Path(args.bundle).is_dir():
        raise BundleError(f"{args.bundle} is a folder, not a .gpabundle",
                          "pass the bundle file (e.g. recorded/cupti.gpabundle), or run `gpa advise "
                          f"{args.bundle}` to replay the bundle of a project folder")
    smap = parse_source_map(args.source_root)
    report = advise_bundle(args.bundle, source_map=smap, root=str(Path.cwd()))
    return emit(report, args, config_file=find_config(Path.cwd()))
