"""`gpa report --html [-o FILE] BUNDLE-or-DIR`: the advice as one self-contained HTML page."""

from __future__ import annotations

import sys
from pathlib import Path

from ..config import load
from ..errors import ConfigError, GpaError
from .analyze import _count, _speedup, parse_source_map

DEFAULT_OUTPUT = "gpa-report.html"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="write the advice as a self-contained HTML page (no network)")
    p.add_argument("target", nargs="?", default=".",
                   help="a .gpabundle, or a project folder with gpa.toml (default: .)")
    p.add_argument("--html", action="store_true", default=True, help="HTML (the only format, and the default)")
    p.add_argument("-o", "--output", metavar="FILE", default=DEFAULT_OUTPUT,
                   help=f"where to write it ('-' for stdout; default: {DEFAULT_OUTPUT})")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel (mangled, demangled or a substring)")
    p.add_argument("--top", type=_count, metavar="N", help="at most N advice per kernel")
    p.add_argument("--min-speedup", type=_speedup, metavar="X", help="only advice estimated at X or more")
    p.add_argument("--source-root", action="append", metavar="OLD=NEW", default=[],
                   help="map source paths recorded at build time (repeatable)")
    p.set_defaults(func=run)


def _report(target: Path, smap):
    from ..analysis.advisor import advise_bundle  # deferred: `gpa` imports every command module to build its parser
    if not target.is_dir():
        if not target.exists():
            raise ConfigError(f"{target} does not exist", "pass a .gpabundle or a project folder with gpa.toml")
        return advise_bundle(str(target), source_map=smap, root=str(Path.cwd()))
    cfg = load(target)
    bundle = cfg.bundle_path
    if bundle is None:
        found = sorted((target / "recorded").glob("*.gpabundle"))
        if not found:
            raise ConfigError(f"{target} has no recorded profile bundle",
                              "set [profile] bundle in gpa.toml, or record one with `gpa profile`", cfg.path)
        bundle = str(found[0])
    return advise_bundle(bundle, config=cfg, source_map=smap)


def run(args) -> int:
    from ..analysis.html_report import render_html  # deferred: `gpa` imports every command module to build its parser

    report = _report(Path(args.target), parse_source_map(args.source_root))
    page = render_html(report, kernel=args.kernel, top=args.top, min_speedup=args.min_speedup)
    if args.output == "-":
        sys.stdout.write(page)
        return 0
    try:
        Path(args.output).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise GpaError(f"cannot write {args.output}: {exc.strerror}",
                       "check that its folder exists and is writable, or pass -o - for stdout") from None
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
