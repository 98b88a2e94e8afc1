"""`gpa advise DIR`: replay the project's recorded bundle (DIR/gpa.toml [profile] bundle); no GPU needed."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .analyze import add_report_arguments, emit, parse_source_map


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("advise", help="print advice for a project folder from its recorded profile bundle")
    p.add_argument("dir", nargs="?", default=".", help="folder with gpa.toml (default: .)")
    add_report_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..analysis.advisor import advise_bundle
    from ..config import find_config, load

    folder = Path(args.dir)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder", "pass a project folder that holds gpa.toml")
    cfg = load(folder)
    bundle = cfg.bundle_path
    if bundle is None:
        found = sorted((folder / "recorded").glob("*.gpabundle"))
        if not found and find_config(folder) is None:
            raise ConfigError(f"{folder} has no gpa.toml (nor [tool.gpa] in pyproject.toml) and no "
                              "recorded/*.gpabundle", "run it in a project folder, or add a gpa.toml with "
                              "[profile] bundle = \"recorded/cupti.gpabundle\"")
        if not found:
            raise ConfigError(f"{folder} has no recorded profile bundle",
                              "set [profile] bundle in gpa.toml, or record one with `gpa profile`",
                              cfg.path)
        bundle = str(found[0])
    smap = parse_source_map(args.source_root)
    report = advise_bundle(bundle, config=cfg, source_map=smap)
    return emit(report, args)
