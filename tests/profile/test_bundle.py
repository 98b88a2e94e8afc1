import json
import zipfile
from dataclasses import replace

import pytest

from gpa_lsp.errors import BundleError
from gpa_lsp.profile.bundle import (SCHEMA_VERSION, Bundle, changed_sources, make_manifest, read_bundle, sha256,
                                    source_records, write_bundle)
from gpa_lsp.profile.source_paths import map_source_path

from pathlib import Path

FIXTURES = Path(__file__).with_name("fixtures")
KERNELS = {"_Z7stencilPKfPfii", "_Z8localarrPKfPfii", "_Z5chasePKiPKfPfii"}


def test_recorded_bundles_read(cupti_bundle, ncu_bundle):
    for b, collector in ((cupti_bundle, "cupti"), (ncu_bundle, "ncu")):
        p = b.profile
        assert p.collector == collector
        assert {k.name for k in p.kernels} == KERNELS
        assert p.device.sm == 90 and p.device.sm_count == 132 and "H100" in p.device.name
        assert all(k.cubin in b.cubins for k in p.kernels)
        assert b.manifest["schema_version"] == SCHEMA_VERSION
        assert b.manifest["sources"][0]["path"] == "probe.cu"


def test_round_trip(tmp_path, cupti_bundle):
    out = write_bundle(tmp_path / "x.gpabundle", cupti_bundle)
    again = read_bundle(out)
    assert again.profile == cupti_bundle.profile
    assert again.cubins == cupti_bundle.cubins
    assert out.stat().st_size < 40_000          # deflated: a 52 KB cubin + 800 PCs


def test_round_trip_keeps_ncu_metrics(tmp_path, ncu_bundle):
    again = read_bundle(write_bundle(tmp_path / "n.gpabundle", ncu_bundle))
    assert again.profile == ncu_bundle.profile
    assert any(p.executed for p in again.profile.pcs)
    assert any(p.sectors for p in again.profile.pcs)


def _rewrite(src, dst, edit):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            data = edit(name, data)
            if data is not None:
                zout.writestr(name, data)


def test_old_and_new_schema(tmp_path):
    src = FIXTURES / "probe.cupti.gpabundle"
    for version, word in ((0, "record it again"), (SCHEMA_VERSION + 1, "upgrade gpa-lsp")):
        def edit(name, data, v=version):
            if name == "manifest.json":
                m = json.loads(data)
                m["schema_version"] = v
                return json.dumps(m)
            return data
        dst = tmp_path / f"v{version}.gpabundle"
        _rewrite(src, dst, edit)
        with pytest.raises(BundleError) as err:
            read_bundle(dst)
        assert f"schema version {version}" in err.value.message
        assert word in err.value.hint


def test_not_a_zip_truncated_and_foreign(tmp_path):
    p = tmp_path / "a.gpabundle"
    p.write_text("hello")
    with pytest.raises(BundleError, match="not a zip"):
        read_bundle(p)
    data = (FIXTURES / "probe.cupti.gpabundle").read_bytes()
    t = tmp_path / "t.gpabundle"
    t.write_bytes(data[: len(data) // 2])
    with pytest.raises(BundleError):
        read_bundle(t)
    z = tmp_path / "z.gpabundle"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("readme.txt", "hi")
    with pytest.raises(BundleError, match="not a gpa bundle"):
        read_bundle(z)
    with pytest.raises(BundleError, match="does not exist"):
        read_bundle(tmp_path / "missing.gpabundle")


def test_corrupt_members(tmp_path):
    src = FIXTURES / "probe.cupti.gpabundle"
    bad_json = tmp_path / "j.gpabundle"
    _rewrite(src, bad_json, lambda n, d: b"{not json" if n == "profile.json" else d)
    with pytest.raises(BundleError, match="corrupt"):
        read_bundle(bad_json)
    bad_cubin = tmp_path / "c.gpabundle"
    _rewrite(src, bad_cubin, lambda n, d: d[:-1] + bytes([d[-1] ^ 1]) if n.endswith(".cubin") else d)
    with pytest.raises(BundleError, match="does not match its sha256"):
        read_bundle(bad_cubin)
    no_cubin = tmp_path / "n.gpabundle"
    _rewrite(src, no_cubin, lambda n, d: None if n.endswith(".cubin") else d)
    with pytest.raises(BundleError, match="lacks the cubin"):
        read_bundle(no_cubin)
    missing_field = tmp_path / "f.gpabundle"

    def drop_device(n, d):
        if n == "profile.json":
            j = json.loads(d)
            del j["device"]
            return json.dumps(j)
        return d
    _rewrite(src, missing_field, drop_device)
    with pytest.raises(BundleError, match="missing or wrong"):
        read_bundle(missing_field)


def test_write_refuses_missing_or_mislabelled_cubin(tmp_path, cupti_bundle):
    with pytest.raises(BundleError, match="no cubin"):
        write_bundle(tmp_path / "x.gpabundle", replace(cupti_bundle, cubins={}))
    key = next(iter(cupti_bundle.cubins))
    with pytest.raises(BundleError, match="not the sha256"):
        write_bundle(tmp_path / "y.gpabundle", Bundle(cupti_bundle.profile, {key: b"other"}, {}))


def test_sources_and_path_mapping(tmp_path):
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    cu = proj / "src" / "k.cu"
    cu.write_text("// kernel\n")
    recs = source_records([cu], proj)
    assert recs == [{"path": "src/k.cu", "abspath": str(cu.resolve()), "sha256": sha256(cu.read_bytes())}]
    manifest = make_manifest(collector="cupti", build_command=["nvcc", "k.cu"], harness_command="./k 3",
                             sources=recs)
    assert manifest["harness_command"] == "./k 3" and manifest["build_command"] == ["nvcc", "k.cu"]
    # recorded on another machine under /build/src
    assert map_source_path("/build/src/k.cu", [("/build", ".")], proj) == str(cu.resolve())
    moved = dict(manifest, sources=[dict(recs[0], abspath="/gpu/box/proj/src/k.cu")])
    assert map_source_path("/gpu/box/proj/src/k.cu", (), proj, moved) == str(cu.resolve())
    assert map_source_path("/nowhere/other.cu", (), proj) == "/nowhere/other.cu"
    b = Bundle(profile=None, cubins={}, manifest=manifest)  # type: ignore[arg-type]
    assert changed_sources(b, proj) == []
    cu.write_text("// edited\n")
    assert changed_sources(b, proj) == ["src/k.cu"]


def test_a_copied_project_reads_its_own_sources(tmp_path):
    """The recorded absolute path exists (the original project), but the copy's own file wins."""
    original = tmp_path / "orig"
    copy = tmp_path / "copy"
    for d in (original, copy):
        d.mkdir()
        (d / "k.cu").write_text("// " + d.name)
    manifest = {"sources": [{"path": "k.cu", "abspath": str(original / "k.cu"), "sha256": "x"}]}
    assert map_source_path(str(original / "k.cu"), (), copy, manifest) == str((copy / "k.cu").resolve())
    assert map_source_path(str(original / "k.cu"), (), None, manifest) == str(original / "k.cu")
