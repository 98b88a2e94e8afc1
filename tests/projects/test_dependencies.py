"""gpa-lsp depends on cuda-bindings (the low-level part of cuda-python), not the cuda-python
metapackage: every `cuda` import in gpa_lsp is one cuda-bindings provides."""

import importlib
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_depends_on_cuda_bindings_not_the_metapackage():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~ \[]", d, 1)[0].lower() for d in deps}
    assert "cuda-bindings" in names and "cuda-python" not in names


def test_every_cuda_import_is_in_cuda_bindings():
    imports = []
    for f in sorted((ROOT / "gpa_lsp").rglob("*.py")):
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = re.match(r"\s*(?:from\s+(cuda(?:\.\w+)*)\s+import\s+(\w+)|import\s+(cuda(?:\.\w+)*))", line)
            if m:
                imports.append((f.relative_to(ROOT), n, line.strip(), m.group(1) or m.group(3), m.group(2)))
    assert imports, "gpa_lsp reads the device through cuda.bindings"
    primary = [i for i in imports if i[3] == "cuda.bindings"]
    assert {i[0] for i in primary} == {Path("gpa_lsp/profile/device.py"), Path("gpa_lsp/sass/arch.py")}
    for path, n, line, module, name in primary:
        importlib.import_module(f"{module}.{name}")          # cuda-bindings alone provides it
    # the others are fallbacks for cuda-python < 12.6, each inside the except ImportError of a primary one
    for path, n, line, module, _ in imports:
        if module != "cuda.bindings":
            before = (ROOT / path).read_text().splitlines()[max(0, n - 4):n - 1]
            assert any("except ImportError" in b for b in before), f"{path}:{n}: {line}"
