"""GPA_PROFILE_TIMING's log of the injection library's marks: times since the library's load;
``clock0`` (where that load is on CLOCK_MONOTONIC, for benchmarks/profiling/exit_cost.py) is not one."""

from gpa_lsp.profile.timing import Marks


def test_library_marks_log_times_since_load_and_leave_clock0_out(monkeypatch):
    monkeypatch.setenv("GPA_PROFILE_TIMING", "1")
    logged: list[str] = []
    Marks(logged.append).library_marks([("clock0", 123456789012345), ("init", 0), ("fini", 555_000_000)])
    assert logged == ["timing: cupti init at 0.000 s", "timing: cupti fini at 0.555 s"]
