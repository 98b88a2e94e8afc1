"""`gpa profile` end to end on this machine (no GPU): build, run, and a clear error instead of a bundle."""

import sys

from gpa_lsp.commands.profile import main


def test_no_gpu_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GPA_SKIP_GPU_CHECK", "1")    # past the check before the run (tests/projects/test_no_gpu.py)
    (tmp_path / "harness.py").write_text("print('done: no CUDA-capable device is detected')\n")
    (tmp_path / "gpa.toml").write_text(f'[harness]\ncommand = ["{sys.executable}", "harness.py"]\n')
    rc = main([str(tmp_path), "--collector", "cupti", "--out", str(tmp_path / "x.gpabundle")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "saw no GPU" in err and "hint:" in err
    assert not (tmp_path / "x.gpabundle").exists()


def test_failing_harness_is_reported_with_its_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GPA_SKIP_GPU_CHECK", "1")
    (tmp_path / "gpa.toml").write_text(f'[harness]\ncommand = ["{sys.executable}", "-c", "import sys; print(\'boom\'); sys.exit(4)"]\n')
    rc = main([str(tmp_path), "--collector", "cupti"])
    err = capsys.readouterr().err
    assert rc == 2 and "exited with code 4" in err and "boom" in err
