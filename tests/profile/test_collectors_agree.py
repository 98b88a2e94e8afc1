"""Both collectors on the same program (probe.cu on the H100): same kernels, same cubin, the same
PC offsets, and overlapping hottest instructions per kernel."""


def _top(profile, kernel, n):
    return [p.offset for p in sorted(profile.pcs_of(kernel), key=lambda p: -p.total)[:n]]


def test_same_kernels_and_cubin(cupti_bundle, ncu_bundle):
    c, n = cupti_bundle.profile, ncu_bundle.profile
    assert {k.name for k in c.kernels} == {k.name for k in n.kernels}
    # the cubin CUPTI saw loaded is byte for byte the one cuobjdump extracted for ncu
    assert set(cupti_bundle.cubins) == set(ncu_bundle.cubins)
    for k in c.kernels:
        assert k.cubin == n.kernel(k.name).cubin
        assert [(l.grid, l.block) for l in k.launches] == [(l.grid, l.block) for l in n.kernel(k.name).launches]


def test_cupti_offsets_are_instructions_ncu_lists(cupti_bundle, ncu_bundle):
    c, n = cupti_bundle.profile, ncu_bundle.profile
    for k in c.kernels:
        ncu_offsets = {p.offset for p in n.pcs_of(k.name)}
        cupti_offsets = {p.offset for p in c.pcs_of(k.name)}
        assert cupti_offsets and all(o % 16 == 0 for o in cupti_offsets)
        assert cupti_offsets <= ncu_offsets
        sampled_by_ncu = {p.offset for p in n.pcs_of(k.name) if p.total}
        assert len(cupti_offsets & sampled_by_ncu) >= 0.9 * len(cupti_offsets)


def test_hottest_instructions_overlap(cupti_bundle, ncu_bundle):
    for name in ("_Z7stencilPKfPfii", "_Z8localarrPKfPfii", "_Z5chasePKiPKfPfii"):
        top_c = _top(cupti_bundle.profile, name, 10)
        top_n = _top(ncu_bundle.profile, name, 10)
        assert len(set(top_c) & set(top_n)) >= 6, (name, top_c, top_n)
        assert top_c[0] in top_n[:3]


def test_stall_mix_agrees(cupti_bundle, ncu_bundle):
    """Share of long_scoreboard samples in chase (pointer chasing): both collectors see it dominate."""
    for b in (cupti_bundle, ncu_bundle):
        pcs = b.profile.pcs_of("_Z5chasePKiPKfPfii")
        total = sum(p.total for p in pcs)
        long_sb = sum(p.stall_dict().get("long_scoreboard", 0) for p in pcs)
        assert long_sb / total > 0.8
