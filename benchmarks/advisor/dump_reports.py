"""Dump ``gpa analyze --json`` of every recorded bundle into a folder, to check that a speed change
changed no result (run before and after, then ``diff -r``).

Bundles: ``kernels/*/recorded/*.gpabundle`` and ``examples/*/recorded/*.gpabundle``. Each report is
written to ``OUT/<case>__<bundle>.json`` (the exit status in ``.rc`` beside it); all in this process
(``gpa_lsp.cli.main``), so the imports are paid once.

    python benchmarks/advisor/dump_reports.py OUT
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpa_lsp.cli import main as gpa  # noqa: E402


def bundles() -> list[Path]:
    return sorted([*ROOT.glob("kernels/*/recorded/*.gpabundle"), *ROOT.glob("examples/*/recorded/*.gpabundle")])


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for bundle in bundles():
        name = f"{bundle.parents[1].name}__{bundle.stem}"
        target = out / f"{name}.json"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                rc = gpa(["analyze", "--json", str(target), str(bundle)])
            except SystemExit as e:
                rc = e.code
        (out / f"{name}.rc").write_text(f"{rc}\n{err.getvalue()}")
        print(name, rc, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
