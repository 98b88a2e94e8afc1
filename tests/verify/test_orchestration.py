"""The timing phase's orchestration: the original program is built once for every kernel.

The builds and runs are replaced by recorders (no GPU here); the per-run figures below are
hand-written inputs of the arithmetic, not measurements.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

from gpa_lsp.verify import dynamic, runner
from gpa_lsp.verify.model import Verification


class _Exp:
    def __init__(self):
        self.copies = 0
        self.scratches = []
        self.config = None
        self._copy = None

    original_copy = runner.Experiment.original_copy

    def make_copy(self):
        self.copies += 1
        return SimpleNamespace(name="original")


def test_original_built_once_for_two_kernels(monkeypatch):
    exp = _Exp()
    monkeypatch.setattr(runner, "make", lambda config, edits: exp.make_copy())
    builds = []
    lock = threading.Lock()

    def build_program(sc, cancel=None):
        with lock:
            builds.append(sc.name)
        return f"/scratch/{sc.name}/a.out"

    timed_kernels = []

    def time_programs(programs, kernel, **kw):
        timed_kernels.append((kernel, [p[0].name for p in programs]))
        # hand-written per-run ns: the variant runs in half the time of the original
        return [dynamic.Timed(runs=[100.0] * 6, device="H100")] + \
               [dynamic.Timed(runs=[50.0] * 6, device="H100") for _ in programs[1:]]

    monkeypatch.setattr(dynamic, "build_program", build_program)
    monkeypatch.setattr(dynamic, "time_programs", time_programs)
    v = Verification(status="static", fix="f")
    to_time = [(("k1", "opt_a"), v, SimpleNamespace(name="k1_a")),
               (("k1", "opt_b"), v, SimpleNamespace(name="k1_b")),
               (("k2", "opt_a"), v, SimpleNamespace(name="k2_a"))]
    out = runner._time(exp, None, to_time, runner.Options(dynamic=True), None, lambda m: None)
    assert builds.count("original") == 1 and exp.copies == 1
    assert sorted(builds) == sorted(["original", "k1_a", "k1_b", "k2_a"])
    assert timed_kernels == [("k1", ["original", "k1_a", "k1_b"]), ("k2", ["original", "k2_a"])]
    assert {k: round(r.speedup, 2) for k, r in out.items()} == {("k1", "opt_a"): 2.0, ("k1", "opt_b"): 2.0,
                                                                 ("k2", "opt_a"): 2.0}
    assert all(r.status == "measured" for r in out.values())


def test_original_that_does_not_build_times_nothing(monkeypatch):
    exp = _Exp()
    monkeypatch.setattr(runner, "make", lambda config, edits: exp.make_copy())
    from gpa_lsp.errors import BuildError

    def build_program(sc, cancel=None):
        if sc.name == "original":
            raise BuildError("nvcc failed")
        return "x"

    monkeypatch.setattr(dynamic, "build_program", build_program)
    monkeypatch.setattr(dynamic, "time_programs", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    logs = []
    v = Verification(status="static", fix="f")
    out = runner._time(exp, None, [(("k1", "o"), v, SimpleNamespace(name="k1"))], runner.Options(dynamic=True),
                       None, logs.append)
    assert out == {} and any("original does not build" in m for m in logs)
