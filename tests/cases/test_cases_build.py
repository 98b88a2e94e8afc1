"""Every case in kernels/ builds and says what it is about.

For each ``kernels/<case>/``: original and improved compile to sm_90 cubins
with real nvcc (in parallel, cubins only: no host link), ``case.toml`` has the
keys the accuracy benchmark and the advisor tests read, its optimizer id is
one of the shared ids, its line exists in ``original.cu`` and holds code, and
``gpa.toml`` loads with :func:`gpa_lsp.config.load`.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from gpa_lsp import config
from gpa_lsp.toolchain import find_tool

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
CASES = sorted(p.parent for p in KERNELS.glob("*/case.toml"))

OPTIMIZERS = {
    "register_reuse", "local_array", "strength_reduction", "function_split", "fast_math", "warp_balance",
    "memory_transaction_reduction", "global_memory_coalescing", "shared_memory_bank_conflicts",
    "loop_unrolling", "loop_no_unroll", "code_reordering", "function_inlining", "restrict_pointer",
    "warp_divergence", "block_increase", "thread_increase", "atomic_privatization",
}
REQUIRED = {"optimizer": str, "top": int, "file": str, "line": int, "kernel": str, "improved": str,
            "description": str}
OPTIONAL = {"seed": str, "collector": str, "alt_lines": list, "loop_line": int, "inner_loop_line": int, "launch_line": int,
            "bounds_line": int, "decl_line": int, "index_line": int, "signature_line": int,
            "improved_flags": list, "split": str, "variant": list, "estimate_min": float, "estimate_max": float}
VARIANT_KEYS = {"name": str, "file": str, "optimizer": str, "change": str, "expect": str}
VARIANT_OPTIONAL = {"flags": list, "also": list}


def _meta(case: Path) -> dict:
    return tomllib.loads((case / "case.toml").read_text())


def _is_code(text: str) -> bool:
    s = text.strip()
    return bool(s) and not s.startswith(("//", "/*", "*"))


def test_library_has_the_cases():
    assert len(CASES) >= 14
    covered = {_meta(c)["optimizer"] for c in CASES}
    for needed in ("local_array", "warp_balance", "global_memory_coalescing", "loop_no_unroll",
                   "strength_reduction", "code_reordering", "thread_increase", "block_increase",
                   "fast_math", "loop_unrolling", "register_reuse", "shared_memory_bank_conflicts",
                   "warp_divergence", "restrict_pointer"):
        assert needed in covered, f"no case for {needed}"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_case_metadata(case: Path):
    meta = _meta(case)
    for key, typ in REQUIRED.items():
        assert isinstance(meta.get(key), typ), f"{case.name}/case.toml: {key} missing or not {typ.__name__}"
    unknown = set(meta) - set(REQUIRED) - set(OPTIONAL)
    assert not unknown, f"{case.name}/case.toml: unknown keys {sorted(unknown)}"
    assert meta["optimizer"] in OPTIMIZERS
    assert meta["top"] in (1, 3)
    assert meta.get("collector", "cupti") in ("cupti", "ncu")
    src = (case / meta["file"]).read_text().splitlines()
    improved = (case / meta["improved"]).read_text()
    lines = [meta["line"], *meta.get("alt_lines", [])] + [v for k, v in meta.items() if k.endswith("_line")]
    for n in lines:
        assert 1 <= n <= len(src), f"{case.name}: line {n} is outside {meta['file']}"
        assert _is_code(src[n - 1]), f"{case.name}: line {n} holds no code: {src[n - 1]!r}"
    # the kernel is defined in both variants, and each harness prints the timing line
    for text in ("\n".join(src), improved):
        assert re.search(r"__global__[^;{]*\b" + re.escape(meta["kernel"]) + r"\s*\(", text), meta["kernel"]
        assert "time_kernel(\"" + meta["kernel"] + "\"" in text
        assert "check_close(" in text
    assert "\n".join(src) != improved
    for name in ("README.md", "gpa.toml"):
        assert (case / name).is_file()
    assert meta.get("split", "calibration") in ("calibration", "validation")
    names = set()
    for v in meta.get("variant", []):
        for key, typ in VARIANT_KEYS.items():
            assert isinstance(v.get(key), typ), f"{case.name}: variant {v.get('name')}: {key} missing or not {typ.__name__}"
        unknown = set(v) - set(VARIANT_KEYS) - set(VARIANT_OPTIONAL)
        assert not unknown, f"{case.name}: variant {v['name']}: unknown keys {sorted(unknown)}"
        assert re.fullmatch(r"[a-z0-9_]+", v["name"]) and v["name"] not in names, v["name"]
        names.add(v["name"])
        assert v["optimizer"] in OPTIMIZERS | {"none"}, f"{case.name}: variant {v['name']}: {v['optimizer']}"
        assert v["expect"] in ("helps", "control"), f"{case.name}: variant {v['name']}: expect {v['expect']}"
        also = v.get("also", [])
        assert set(also) <= OPTIMIZERS and v["optimizer"] not in also and len(set(also)) == len(also), \
            f"{case.name}: variant {v['name']}: also {also}"
        text = (case / v["file"]).read_text()
        assert re.search(r"__global__[^;{]*\b" + re.escape(meta["kernel"]) + r"\s*\(", text), v["file"]
        assert "time_kernel(\"" + meta["kernel"] + "\"" in text and "check_close(" in text, v["file"]
        assert text != "\n".join(src) or v.get("flags"), f"{case.name}: variant {v['name']} changes nothing"
    if meta.get("variant"):
        assert meta["improved"] in {v["file"] for v in meta["variant"]}, f"{case.name}: improved is not a variant"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_gpa_toml_loads(case: Path):
    cfg = config.load(case)
    meta = _meta(case)
    assert cfg.path == str(case / "gpa.toml")
    assert cfg.build.sources == (meta["file"],)
    assert "-arch=sm_90" in cfg.build.nvcc_flags
    assert cfg.harness.command[0] == cfg.build.output and "--quick" in cfg.harness.command
    assert cfg.profile.collector == meta.get("collector", "cupti")
    assert cfg.bundle_path == str((case / "recorded" / f"{cfg.profile.collector}.gpabundle").resolve())
    assert meta["kernel"] in cfg.profile.kernels


def _compile(src: Path, out: Path) -> str | None:
    argv = [find_tool("nvcc"), "-cubin", "-O3", "-arch=sm_90", "-lineinfo", "-o", str(out), str(src)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    return None if proc.returncode == 0 else f"{src}: {proc.stderr[-3000:]}"


def _variant_jobs(case: Path, base: Path) -> dict[str, tuple[Path, Path]]:
    """{variant: (source, cubin)}: the original, the improved variant and every other variant."""
    meta = _meta(case)
    jobs = {variant: (case / name, base / f"{case.name}.{variant}.cubin")
            for variant, name in (("original", meta["file"]), ("improved", meta["improved"]))}
    for v in meta.get("variant", []):
        if v["file"] != meta["improved"]:
            jobs["variant:" + v["name"]] = (case / v["file"], base / f"{case.name}.v.{v['name']}.cubin")
    return jobs


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_variants_compile_to_cubins(case: Path, tmp_path):
    """Each case's variants compiled here, two nvcc at a time: one case per test, so pytest-xdist
    spreads the library's ~190 compiles over its workers (a module fixture ran them all on every
    worker that had a case)."""
    meta = _meta(case)
    jobs = _variant_jobs(case, tmp_path)
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        errors = [e for e in pool.map(lambda j: _compile(*j), jobs.values()) if e]
    assert not errors, "\n".join(errors)
    for variant in ("original", "improved"):
        cubin = jobs[variant][1]
        data = cubin.read_bytes()
        assert data[:4] == b"\x7fELF"
        assert meta["kernel"].encode() in data, f"{case.name}/{variant}: kernel {meta['kernel']} not in the cubin"
        # -lineinfo kept the source file in the line table
        assert Path(meta["file"] if variant == "original" else meta["improved"]).name.encode() in data
