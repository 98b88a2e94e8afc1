"""The coalescing probes' measurements (``gpa_lsp/data/coalescing.json``, written by
benchmarks/coalescing/table*.py), read and parsed once for every model that reads them
(analysis/coalescing.py, gathers.py, lanewalk.py)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def coalescing_devices() -> dict:
    """Device name -> that device's probe tables ({} when the file has none)."""
    text = resources.files("gpa_lsp").joinpath("data/coalescing.json").read_text()
    return json.loads(text).get("devices", {})
