"""The KernelContext of a case's recorded bundle, for tests that check a model's inputs on real
profiles (the case's kernel, as the advisor builds it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from gpa_lsp.analysis.advisor import _programs, build_context
from gpa_lsp.analysis.sources import make_reader
from gpa_lsp.profile.bundle import read_bundle

ROOT = Path(__file__).resolve().parents[2]


def case_context(case: str, collector: str = "ncu"):
    spec = tomllib.loads((ROOT / "kernels" / case / "case.toml").read_text())
    bundle = read_bundle(ROOT / "kernels" / case / "recorded" / f"{collector}.gpabundle")
    programs, _ = _programs(bundle)
    kernel = next(k for k in bundle.profile.kernels if spec["kernel"] in k.demangled)
    pcs = [p for p in bundle.profile.pcs if p.cubin == kernel.cubin and p.function == kernel.name]
    return build_context(programs[kernel.cubin], kernel, pcs, bundle.profile.device, make_reader())
