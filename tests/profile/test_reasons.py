from gpa_lsp.profile.reasons import CATEGORIES, REASONS, category, normalize, parse


def test_cupti_names():
    assert parse("smsp__pcsamp_warps_issue_stalled_long_scoreboard") == ("long_scoreboard", False)
    assert parse("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued") == ("long_scoreboard", True)
    assert parse("smsp__pcsamp_warps_issue_stalled_warpgroup_arrive_not_issued") == ("warpgroup_arrive", True)
    assert parse("smsp__pcsamp_warps_issue_stalled_not_selected_not_issued") == ("not_selected", True)
    assert parse("smsp__pcsamp_warps_issue_stalled_not_selected") == ("not_selected", False)
    assert parse("smsp__pcsamp_sample_count") is None
    assert parse("smsp__pcsamp_samples_data_dropped") is None


def test_ncu_names():
    assert parse("stall_long_sb") == ("long_scoreboard", False)
    assert parse("stall_long_sb (Not Issued)") == ("long_scoreboard", True)
    assert parse("stall_sleeping (Not Issued)") == ("sleeping", True)
    assert parse("stall_sleep") == ("sleeping", False)
    assert normalize("stall_math") == "math_pipe_throttle"
    assert normalize("stall_dispatch") == "dispatch_stall"
    assert normalize("stall_imc") == "imc_miss"
    assert normalize("stall_no_inst") == "no_instructions"
    assert normalize("stall_lg") == "lg_throttle"
    assert normalize("stall_mio") == "mio_throttle"
    assert normalize("stall_tex") == "tex_throttle"
    assert normalize("Warp Stall Sampling (All Samples)") is None
    assert normalize("Address") is None


def test_every_ncu_column_of_the_real_export_maps(tmp_path):
    import csv
    import gzip
    from pathlib import Path
    text = gzip.open(Path(__file__).with_name("fixtures") / "probe.ncu-source.csv.gz", "rt").read()
    header = next(r for r in csv.reader(text.splitlines()) if r and r[0] == "Address")
    stall_cols = [h for h in header if h.startswith("stall_")]
    assert len(stall_cols) == 36
    got = {parse(h) for h in stall_cols}
    assert None not in got
    assert len(got) == 36     # 18 reasons, all and not-issued


def test_categories_follow_gpa_table():
    assert category("long_scoreboard") == "memory_dependency"
    assert category("stall_short_sb") == "execution_dependency"
    assert category("wait") == "execution_dependency"
    assert category("barrier") == category("membar") == category("warpgroup_arrive") == "synchronization"
    assert category("no_instructions") == category("branch_resolving") == "instruction_fetch"
    assert category("lg_throttle") == category("drain") == category("tex_throttle") == "memory_throttle"
    assert category("math_pipe_throttle") == category("mio_throttle") == category("dispatch_stall") == "pipe_busy"
    assert category("imc_miss") == "constant_memory"
    assert category("not_selected") == "not_selected"
    assert category("selected") == "active"
    assert category("misc") == category("sleeping") == category("something_new") == "other"
    assert {category(r) for r in REASONS} == set(CATEGORIES)
