"""`gpa advise DIR`: replay the project's recorded bundle (DIR/gpa.toml [profile] bundle); no GPU needed."""

from __future__ import annotations

from pathlib import Path

from ..config import find_config, load
from ..errors import ConfigError
from .analyze import add_report_arguments, emit, parse_source_map
from .verify import add_verify_arguments, verify_and_emit


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("advise", help="print advice for a project folder from its recorded profile bundle")
    p.add_argument("dir", nargs="?", default=".", help="folder with gpa.toml (default: .)")
    add_report_arguments(p)
    p.add_argument("--verify", action="store_true",
                   help="try the top fixes first (compile, compare, and time them when a GPU is present)")
    add_verify_arguments(p)
    p.set_defaults(func=run)


def project_bundle(folder, smap):
    """(config, bundle path, report with the stored verification results) of a project folder."""
    # deferred: `gpa` imports every command module to build its parser
    from ..analysis.advisor import advise_bundle
    from ..verify.runner import with_stored

    folder = Path(folder)
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
    report = advise_bundle(bundle, config=cfg, source_map=smap)
    return cfg, bundle, with_stored(cfg, bundle, report)


def run(args) -> int:
    cfg, bundle, report = project_bundle(args.dir, parse_source_map(args.source_root))
    if args.verify:
        return verify_and_emit(cfg, bundle, report, args)
    return emit(report, args, config_file=cfg.path or Path(args.dir) / "gpa.toml")
