"""`gpa advise DIR`: replay the project's recorded bundle (DIR/gpa.toml [profile] bundle); no GPU needed."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .analyze import emit, parse_source_map


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("advise", help="print advice for a project folder from its recorded profile bundle")
    p.add_argument("dir", nargs="?", default=".", help="folder with gpa.toml (default: .)")
    p.add_argument("--source-root", action="append", metavar="OLD=NEW", default=[],
                   help="map source paths recorded at build time (repeatable)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", metavar="FILE", help="write the report as JSON ('-' for stdout)")
    fmt.add_argument("--sarif", metavar="FILE", help="write the report as SARIF 2.1.0 ('-' for stdout)")
    p.add_argument("--kernel", metavar="NAME", help="only this kernel")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..analysis.advisor import advise_bundle
    from ..config import load

    folder = Path(args.dir)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder", "pass a project folder that holds gpa.toml")
    cfg = load(folder)
    bundle = cfg.bundle_path
    if bundle is None:
        found = sorted((folder / "recorded").glob("*.gpabundle"))
        if not found:
            raise ConfigError(f"{folder} has no recorded profile bundle",
                              "set [profile] bundle in gpa.toml, or record one with `gpa profile`",
                              cfg.path)
        bundle = str(found[0])
    smap = parse_source_map(args.source_root)
    report = advise_bundle(bundle, config=cfg, source_map=smap)
    return emit(report, args)
