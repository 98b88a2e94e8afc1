"""`gpa verify DIR`: try the top mechanical fixes of a project's advice, then print the re-ranked advice.

Each fix is made in a scratch copy, compiled and compared with the original's SASS (no GPU);
with a GPU it is timed interleaved with the original by the project's harness. Results are
stored in the project's bundle, so `gpa advise DIR` shows them anywhere afterwards.
"""

from __future__ import annotations

import sys

from ..profile.gpu_check import gpu_present
from .analyze import add_report_arguments, emit, parse_source_map


def add_verify_arguments(p) -> None:
    if "--top" not in p._option_string_actions:    # `gpa advise`: the report's --top (advice shown) is the same N
        p.add_argument("--top", type=int, metavar="N", help="fixes to try (default: [verify] top, 3)")
    p.add_argument("--pairs", type=int, metavar="N", help="interleaved timing rounds (default: [verify] pairs, 5)")
    p.add_argument("--static-only", action="store_true", help="compile and compare only; do not time on the GPU")
    p.add_argument("--no-store", action="store_true", help="do not keep the results in the bundle")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("verify", help="compile, compare and time the top fixes of a project's advice")
    p.add_argument("dir", nargs="?", default=".", help="folder with gpa.toml (default: .)")
    p.add_argument("--fix", type=int, metavar="N", help="only the N-th fix (1 = the top one)")
    add_verify_arguments(p)
    add_report_arguments(p)
    p.set_defaults(func=run)


def options_of(args, cfg):
    from ..verify.runner import Options  # deferred: `gpa` imports every command module to build its parser
    top = args.top if args.top is not None else cfg.verify.top
    pairs = args.pairs if args.pairs is not None else cfg.verify.pairs
    return Options(top=max(0, top), pairs=max(5, pairs), budget_s=cfg.verify.budget_s,
                   dynamic=not args.static_only and gpu_present(), only=getattr(args, "fix", None),
                   store=not args.no_store)


def verify_and_emit(cfg, bundle: str, report, args) -> int:
    from ..verify.runner import verify_report  # deferred: `gpa` imports every command module to build its parser
    opts = options_of(args, cfg)
    if not opts.dynamic:
        why = "--static-only" if args.static_only else "no GPU on this machine"
        print(f"gpa: verify: compiling and comparing only ({why})", file=sys.stderr)
    report, results = verify_report(cfg, bundle, report, opts, log=lambda m: print(f"gpa: {m}", file=sys.stderr))
    if not results:
        print("gpa: verify: no advice with a mechanical fix to try", file=sys.stderr)
    return emit(report, args)


def run(args) -> int:
    from .advise import project_bundle  # a real cycle: advise imports this module
    cfg, bundle, report = project_bundle(args.dir, parse_source_map(args.source_root))
    return verify_and_emit(cfg, bundle, report, args)
