from __future__ import annotations

from gpa_lsp.sass import arch as archmod


def test_tables_cover_the_supported_architectures():
    for sm in (70, 75, 80, 86, 89, 90, 100, 120):
        a = archmod.arch(sm)
        assert a.sm == sm and a.schedulers_per_sm == 4 and a.registers_per_sm == 65536
        assert a.max_threads_per_block == 1024 and a.max_shared_per_block <= a.shared_per_sm
    h100 = archmod.arch(90)
    assert h100.warps_per_sm == 64 and h100.max_blocks_per_sm == 32 and h100.shared_per_sm == 228 * 1024
    assert archmod.arch(86).warps_per_sm == 48
    assert archmod.arch(87).warps_per_sm == 48 and archmod.arch(87).sm == 87   # nearest lower: 86


def test_from_device_without_gpu_is_none_or_real():
    spec = archmod.from_device()
    assert spec is None or (spec.sm_count and spec.sm_count > 0)


def test_latency_classes_on_real_instructions(nested_program):
    k = nested_program.function("_Z6nestedPKfPfii")
    seen = {}
    for ins in k.instructions:
        seen.setdefault(archmod.latency_class(ins), ins)
    ldg = seen["memory"]
    assert archmod.latency(ldg) == (28, 1024, False)
    lds = seen["shared_memory"]
    assert archmod.latency(lds)[:2] == (19, 80) and not archmod.latency(lds)[2]
    fp = next(i for i in k.instructions if i.base_opcode == "FADD")
    lo, hi, fixed = archmod.latency(fp)
    assert (lo, hi) == (4, 4) and fixed == (fp.control.write_barrier is None)
    assert archmod.latency(next(i for i in k.instructions if i.base_opcode == "ISETP"))[:2] == (5, 5)
    callee = next(f for f in nested_program.functions if not f.entry)
    mufu = next(i for i in callee.instructions if i.base_opcode == "MUFU")
    assert archmod.latency(mufu) == (14, 14, False)
