"""A fresh CUPTI run in the editor: the sampled advice goes out first, the bounded advice follows.

``pipeline.execute`` with stand-ins for the two GPU stages that replay what the H100 recorded for
kernels/lavamd_unroll: "collect" writes its CUPTI bundle without the unit throughput, "measure"
attaches the throughput the CUPTI collector's ncu pass measured in that recording. The advisor,
the cache and the pipeline are the real ones.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from gpa_lsp.config import Config, ProfileConfig, ServerConfig
from gpa_lsp.profile.bundle import read_bundle, write_bundle
from gpa_lsp.server.cache import ResultCache
from gpa_lsp.server.pipeline import Stages, execute

RECORDED = Path(__file__).resolve().parents[2] / "kernels" / "lavamd_unroll" / "recorded" / "cupti.gpabundle"


def _stages(log: list):
    rec = read_bundle(RECORDED)
    measured = {k.name: k.throughput for k in rec.profile.kernels}

    def collect(config, cancel, out):
        log.append(("collect", config.profile.throughput))
        bare = replace(rec.profile, kernels=tuple(replace(k, throughput=None) for k in rec.profile.kernels))
        write_bundle(Path(out), replace(rec, profile=bare))
        return out

    def measure(config, bundle, cancel=None):
        log.append(("measure", bundle))
        b = read_bundle(bundle)
        got = replace(b.profile, kernels=tuple(replace(k, throughput=measured[k.name]) for k in b.profile.kernels))
        write_bundle(Path(bundle), replace(b, profile=got))
        return None

    from gpa_lsp.analysis.advisor import advise_bundle
    return Stages(collect=collect, measure=measure, has_gpu=lambda: True,
                  advise=lambda bundle, config: advise_bundle(bundle, config=config))


def _unrolling(report):
    return next(a for k in report.kernels for a in k.advice if a.optimizer == "loop_unrolling")


def test_sampled_advice_first_then_bounded(tmp_path):
    log, partial = [], []
    config = Config(root=str(tmp_path), profile=ProfileConfig(collector="cupti"))
    out = execute(config, trusted=True, cancel=threading.Event(), cache=ResultCache(tmp_path, home=tmp_path / "c"),
                  stages=_stages(log), on_partial=partial.append)
    assert out.error is None and out.report is not None
    assert log[0] == ("collect", False)          # the collection itself never waits for the pass
    assert log[1][0] == "measure"
    assert len(partial) == 1 and "measuring unit throughput" in partial[0].note
    first, final = _unrolling(partial[0].report), _unrolling(out.report)
    assert first.bounded_by is None and first.estimated_speedup > 1.75        # Eq. 5 alone
    assert final.bounded_by == "l1" and final.estimated_speedup < 1.65        # the L1 at ~63% of peak


def test_no_second_phase_when_switched_off(tmp_path):
    log, partial = [], []
    config = Config(root=str(tmp_path), profile=ProfileConfig(collector="cupti"),
                    server=ServerConfig(throughput_on_save=False))
    out = execute(config, trusted=True, cancel=threading.Event(), cache=ResultCache(tmp_path, home=tmp_path / "c"),
                  stages=_stages(log), on_partial=partial.append)
    assert [s for s, _ in log] == ["collect"] and not partial
    assert _unrolling(out.report).bounded_by is None


def test_a_newer_save_cancels_the_pass(tmp_path):
    log, partial = [], []
    cancel = threading.Event()
    stages = _stages(log)
    inner = stages.measure

    def measure(config, bundle, cancel=None):
        cancel.set()                              # the user saved again while ncu was running
        return inner(config, bundle, cancel)
    stages.measure = measure
    config = Config(root=str(tmp_path), profile=ProfileConfig(collector="cupti"))
    out = execute(config, trusted=True, cancel=cancel, cache=ResultCache(tmp_path, home=tmp_path / "c"),
                  stages=stages, on_partial=partial.append)
    assert out.cancelled and out.report is None
    assert len(partial) == 1                      # what was shown stays until the newer run replaces it


def test_unit_throughput_from_the_cache_makes_one_phase(tmp_path):
    """The hot kernels did not change (Stages.do_cached covered them): the first advice shown is the
    bounded one, and neither the partial outcome nor the measuring pass happens."""
    log, partial = [], []
    stages = _stages(log)
    measured = {k.name: k.throughput for k in read_bundle(RECORDED).profile.kernels}

    def cached(config, bundle):
        log.append(("cached", bundle))
        b = read_bundle(bundle)
        got = replace(b.profile, kernels=tuple(replace(k, throughput=measured[k.name]) for k in b.profile.kernels))
        write_bundle(Path(bundle), replace(b, profile=got))
        return True

    stages = replace(stages, cached=cached)
    config = Config(root=str(tmp_path), profile=ProfileConfig(collector="cupti"))
    out = execute(config, trusted=True, cancel=threading.Event(), cache=ResultCache(tmp_path, home=tmp_path / "c"),
                  stages=stages, on_partial=partial.append)
    assert out.error is None and [e[0] for e in log] == ["collect", "cached"] and not partial
    final = _unrolling(out.report)
    assert final.bounded_by == "l1" and final.estimated_speedup < 1.65
