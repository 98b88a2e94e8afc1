"""`gpa profile`: build, run the harness under a PC-sampling collector, write the bundle."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from ..config import THROUGHPUT_COLLECTORS, load
from ..errors import ConfigError, GpaError
from ..profile.collect import collect_result


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("profile", help="record a profile bundle on this machine's GPU")
    p.add_argument("project", nargs="?", default=".", help="project folder (with gpa.toml); default: .")
    p.add_argument("--collector", choices=("cupti", "ncu"), help="default: [profile] collector, else cupti")
    p.add_argument("--out", help="bundle to write (default: <project>/.gpa/<collector>.gpabundle)")
    p.add_argument("--no-build", action="store_true", help="run the harness as it is, without building")
    p.add_argument("--sampling-period", type=int, help="CUPTI: log2 cycles between samples (5..31)")
    p.add_argument("--min-samples", type=int, help="CUPTI: samples wanted on the hottest kernel; fewer -> one "
                   "more run at a shorter period (default: [profile] min_samples, 10000; 0: never)")
    p.add_argument("--launch-count", type=int, help="ncu: launches to profile per kernel")
    p.add_argument("--no-throughput", action="store_true",
                   help="CUPTI: skip the unit-throughput pass (a second harness run)")
    p.add_argument("--throughput-collector", choices=THROUGHPUT_COLLECTORS,
                   help="CUPTI: who measures unit throughput (default: [profile] throughput_collector, auto: "
                        "CUPTI's Range Profiler, else ncu --metrics)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = load(args.project)
    prof = config.profile
    if args.sampling_period is not None:
        if not 5 <= args.sampling_period <= 31:
            raise ConfigError("--sampling-period must be between 5 and 31")
        prof = replace(prof, sampling_period=args.sampling_period)
    if args.min_samples is not None:
        prof = replace(prof, min_samples=max(0, args.min_samples))
    if args.launch_count is not None:
        prof = replace(prof, launch_count=max(1, args.launch_count))
    if args.no_throughput:
        prof = replace(prof, throughput=False)
    if args.throughput_collector:
        prof = replace(prof, throughput_collector=args.throughput_collector)
    config = replace(config, profile=prof)
    collector = args.collector or (config.profile.collector if config.profile.collector != "replay" else "cupti")
    res = collect_result(config, collector=collector, out=args.out, build=not args.no_build,
                         log=lambda m: print(f"gpa: {m}", file=sys.stderr))
    print(res.summary())
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m gpa_lsp.commands.profile`: the same command without the other subcommands' imports
    (the GPU machine has only the standard library and cuda-bindings)."""
    parser = argparse.ArgumentParser(prog="gpa profile")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    args = parser.parse_args(["profile", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run(args)
    except GpaError as exc:
        print(f"gpa: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"gpa: hint: {exc.hint}", file=sys.stderr)
        tail = getattr(exc, "output", "") or getattr(exc, "output_tail", "")
        if tail:
            print(tail.rstrip()[-4000:], file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
