"""`gpa diff A.gpabundle B.gpabundle`: what changed between two recordings, per kernel and line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import BundleError, GpaError
from .analyze import parse_source_map


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("diff", help="compare two recorded bundles: time per launch, stall reasons, lines")
    p.add_argument("a", help="the recording before (.gpabundle)")
    p.add_argument("b", help="the recording after (.gpabundle)")
    p.add_argument("--json", metavar="FILE", help="write the comparison as JSON ('-' for stdout)")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel (mangled, demangled or a substring)")
    p.add_argument("--source-root", action="append", metavar="OLD=NEW", default=[],
                   help="map source paths recorded at build time (repeatable, both bundles)")
    p.add_argument("--lines", type=int, default=8, metavar="N", help="changed lines shown per kernel (text)")
    p.set_defaults(func=run)


def run(args) -> int:
    # deferred: `gpa` imports every command module to build its parser
    from ..analysis.advisor import advise_recording
    from ..analysis.diff import diff_reports, render_diff_text

    for path in (args.a, args.b):
        if Path(path).is_dir():
            raise BundleError(f"{path} is a folder, not a .gpabundle", "pass two bundle files, e.g. "
                              "recorded/cupti.gpabundle recorded/improved/cupti.gpabundle")
    smap = parse_source_map(args.source_root)
    data = diff_reports(advise_recording(args.a, smap), advise_recording(args.b, smap), kernel=args.kernel)
    if args.json:
        text = json.dumps(data, indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            try:
                Path(args.json).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise GpaError(f"cannot write {args.json}: {exc.strerror}",
                               "check that its folder exists and is writable, or pass '-' for stdout") from None
        return 0
    sys.stdout.write(render_diff_text(data, max_lines=max(0, args.lines)))
    return 0
