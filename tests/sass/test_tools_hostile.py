"""External tools on hostile input (issue 16, items 1, 7, 8, 11): nvdisasm bounded in time and killed
with its process group, a damaged cubin skipped with a note while the other kernels are analysed, ELF
damage a clean error, a leading dash never an option, no shell characters handed to nvcc."""

from __future__ import annotations

import struct
import time
import zipfile
from pathlib import Path

import pytest

from gpa_lsp import procs
from gpa_lsp.cli import main
from gpa_lsp.config import BuildConfig, Config
from gpa_lsp.errors import BuildError
from gpa_lsp.profile.bundle import Bundle, read_bundle, write_bundle
from gpa_lsp.profile.model import Profile
from gpa_lsp.sass import clear_cache
from gpa_lsp.toolchain import find_tool

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] == "Z"
    except OSError:
        return True


def test_timeout_is_sized_to_the_input():
    assert procs.tool_timeout(0) == 30.0
    assert procs.tool_timeout(1_000_000) == pytest.approx(40.0)


def _two_cubin_bundle(tmp_path) -> tuple[Path, bytes, str]:
    a = read_bundle(KERNELS / "fan2_threads" / "recorded" / "cupti.gpabundle")
    b = read_bundle(KERNELS / "transpose_banks" / "recorded" / "cupti.gpabundle")
    prof = Profile(collector="cupti", device=a.profile.device, kernels=a.profile.kernels + b.profile.kernels,
                   pcs=a.profile.pcs + b.profile.pcs)
    path = write_bundle(tmp_path / "two.gpabundle", Bundle(prof, {**a.cubins, **b.cubins}, dict(a.manifest)))
    spin_key = b.profile.kernels[0].cubin
    return path, b.cubins[spin_key], b.profile.kernels[0].name


def test_spinning_nvdisasm_is_stopped_and_the_other_kernels_are_analysed(tmp_path, monkeypatch, capsys):
    """Item 1: nvdisasm that never ends on one (damaged) cubin: killed at its timeout with what it
    started, that kernel reported as not analysed, the others analysed."""
    path, spin, spin_kernel = _two_cubin_bundle(tmp_path)
    (tmp_path / "spin.cubin").write_bytes(spin)
    fake = tmp_path / "nvdisasm"
    fake.write_text(f"""#!/bin/sh
for a; do last=$a; done
if cmp -s "$last" "{tmp_path}/spin.cubin"; then
  sleep 600 & echo $! > "{tmp_path}/child"; echo $$ > "{tmp_path}/pid"; wait
fi
exec "{find_tool('nvdisasm')}" "$@"
""")
    fake.chmod(0o755)
    monkeypatch.setattr("gpa_lsp.sass.disasm.find_tool", lambda name: str(fake))
    monkeypatch.setattr(procs, "BASE_TIMEOUT_S", 5.0)
    monkeypatch.setattr(procs, "BYTES_PER_SECOND", 10 ** 12)
    clear_cache()
    try:
        start = time.monotonic()
        assert main(["analyze", str(path)]) == 0
        assert time.monotonic() - start < 30
    finally:
        clear_cache()
    out, err = capsys.readouterr()
    assert "gpa: warning: kernel" in err and "not analysed" in err and "did not finish disassembling" in err
    assert "Traceback" not in err
    assert "fan2" in out.lower() or "Fan2" in out           # the other kernel is reported
    for f in ("pid", "child"):
        assert _gone(int((tmp_path / f).read_text())), f"the {f} of the spinning nvdisasm survived"


def test_flipped_section_header_is_a_clean_error(tmp_path, capsys):
    """Item 7: a section marked compressed (pyelftools raised ELFCompressionError)."""
    with zipfile.ZipFile(KERNELS / "fan2_threads" / "recorded" / "cupti.gpabundle") as z:
        data = bytearray(next(z.read(n) for n in z.namelist() if n.endswith(".cubin")))
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    k = next(i for i in range(1, shnum) if struct.unpack_from("<I", data, shoff + i * shentsize + 4)[0] != 8)
    flags, = struct.unpack_from("<Q", data, shoff + k * shentsize + 8)
    struct.pack_into("<Q", data, shoff + k * shentsize + 8, flags | 0x800)
    bad = tmp_path / "bad.cubin"
    bad.write_bytes(bytes(data))
    assert main(["disasm", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpa: error: ") and "Traceback" not in err
    assert f"section {k} is marked compressed" in err


def test_a_leading_dash_is_never_an_option(tmp_path, monkeypatch, capsys):
    """Item 8: `gpa disasm ./-x.cubin` disassembles the file."""
    with zipfile.ZipFile(KERNELS / "fan2_threads" / "recorded" / "cupti.gpabundle") as z:
        (tmp_path / "-x.cubin").write_bytes(next(z.read(n) for n in z.namelist() if n.endswith(".cubin")))
    monkeypatch.chdir(tmp_path)
    clear_cache()
    assert main(["disasm", "./-x.cubin"]) == 0
    assert "Fan2" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["a$(touch pwned).cu", "b`id`.cu", "c;rm.cu", "d|e.cu", "f&.cu", "g<h>.cu",
                                  'q".cu', "s'.cu", "back\\slash.cu", "new\nline.cu"])
def test_nvcc_never_sees_shell_characters_in_a_source_name(tmp_path, name):
    """Item 11: refused with a message naming the path; nvcc is not started."""
    (tmp_path / name).write_text("__global__ void k() {}\n")
    cfg = Config(root=str(tmp_path), build=BuildConfig(sources=(name,)))
    from gpa_lsp.build import build
    with pytest.raises(BuildError) as err:
        build(cfg)
    assert repr(str(tmp_path / name)) in err.value.message and "nvcc would hand to a shell" in err.value.message
    assert not (tmp_path / "pwned").exists()


def test_nvcc_never_sees_shell_characters_in_a_folder_name(tmp_path):
    folder = tmp_path / "$(touch pwned)"
    folder.mkdir()
    (folder / "k.cu").write_text("__global__ void k() {}\n")
    from gpa_lsp.build import build
    with pytest.raises(BuildError, match=r"the source .*\$\(touch pwned\)/k\.cu' contains '\$'"):
        build(Config(root=str(folder), build=BuildConfig(sources=("k.cu",))))
    assert not any(p.name == "pwned" for p in tmp_path.rglob("pwned"))
