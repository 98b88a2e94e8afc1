"""The probe tables are what the table scripts make of the recordings kept beside them: each
device's rows of ``gpa_lsp/data/coalescing.json`` and ``atomics.json`` regenerated from
``benchmarks/coalescing/recorded/`` (the H100's unprefixed files, another device's ``NAME_TAG_*``)
and ``benchmarks/atomics/*.jsonl`` come out byte-identical. (The H100's walk probe, record.sh's
unprefixed list.txt, was not kept: its rows are carried over.)"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COALESCING = ROOT / "benchmarks" / "coalescing"
RECORDED = COALESCING / "recorded"
DATA = ROOT / "gpa_lsp" / "data"


def _script(path: Path):
    """Import a benchmarks script under a name of its own (both folders hold a table.py)."""
    sys.path.insert(0, str(path.parent))          # the coalescing scripts import probe_records
    try:
        spec = importlib.util.spec_from_file_location(f"_{path.parent.name}_{path.stem}", path)
        mod = sys.modules[spec.name] = importlib.util.module_from_spec(spec)     # dataclasses look it up
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(path.parent))


def test_coalescing_json_is_its_recordings(tmp_path):
    out = tmp_path / "coalescing.json"
    shutil.copy(DATA / "coalescing.json", out)
    rec, o = str(RECORDED), ["--out", str(out)]
    lanewalk, gather = _script(COALESCING / "table_lanewalk.py"), _script(COALESCING / "table_fieldgather.py")
    probe, walk = _script(COALESCING / "table_probe.py"), _script(COALESCING / "table.py")
    for tag in ([], ["--device", "h200"]):
        if tag:
            walk.main([rec, *tag, *o])
        else:
            lanewalk.main([rec, *o])
        gather.main([rec, *tag, *o])
        lanewalk.main([rec, "--name", "lanewalk_spread", *tag, *o])
        probe.main(["loopfree", rec, *tag, *o])
        if not tag:
            probe.main(["overlap", rec, *o])
    assert out.read_bytes() == (DATA / "coalescing.json").read_bytes()


def test_an_h200_recording_is_read_under_its_own_name():
    pr = _script(COALESCING / "probe_records.py")
    assert pr.file_prefix("loopfree", "h200") == "loopfree_h200_" and pr.file_prefix(None, "h200") == "walk_h200_"
    assert pr.file_prefix("loopfree", None) == "loopfree_" and pr.file_prefix(None, None) == ""
    rec = pr.read(RECORDED, "loopfree", first="config", key=("config", "warps_per_sm"), device="h200")
    h100 = pr.read(RECORDED, "loopfree", first="config", key=("config", "warps_per_sm"))
    assert rec.device == "NVIDIA H200" and h100.device == "NVIDIA H100 80GB HBM3"
    assert rec.configs == h100.configs and rec.median_ms(rec.configs[0]) != h100.median_ms(h100.configs[0])


def test_atomics_json_is_its_recordings(tmp_path):
    table = _script(ROOT / "benchmarks" / "atomics" / "table.py")
    out = tmp_path / "atomics.json"
    table.main(["--out", str(out)])
    assert out.read_bytes() == (DATA / "atomics.json").read_bytes()
    assert list(table.RECORDINGS.values())[0] == "NVIDIA H100 80GB HBM3"     # a device of no probed chip takes its rows
