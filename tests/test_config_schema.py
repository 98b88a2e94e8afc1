"""The JSON Schema for gpa.toml (gpa_lsp/config_schema.py -> gpa_lsp/data/gpa.schema.json).

The shipped file is what the generator writes now; every gpa.toml in the repository validates;
every key of the dataclasses is in it with a description; and the schema and the loader agree:
what the schema rejects, gpa_lsp.config rejects too (and the defaults pass both).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import fields
from pathlib import Path

import jsonschema
import pytest

from gpa_lsp import config
from gpa_lsp.config_schema import SCHEMA_PATH, config_schema, schema_text, write_schema
from gpa_lsp.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
TOMLS = sorted(p for p in ROOT.rglob("gpa.toml") if not any(part.startswith(".") for part in p.relative_to(ROOT).parts))


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_the_shipped_schema_is_up_to_date(tmp_path):
    assert SCHEMA_PATH.read_text() == schema_text(), \
        "gpa_lsp/data/gpa.schema.json is stale: run `python -m gpa_lsp.config_schema`"
    out = write_schema(tmp_path / "s.json")
    assert json.loads(out.read_text()) == config_schema()


def test_every_key_is_described():
    props = config_schema()["properties"]
    for section, cls in config._SECTIONS.items():
        assert set(props[section]["properties"]) == {f.name for f in fields(cls)}
        for name, s in props[section]["properties"].items():
            assert s.get("description"), f"[{section}] {name} has no description"
    assert "source_map" in props["paths"]["properties"]


def test_every_gpa_toml_in_the_repository_validates(validator):
    assert len([p for p in TOMLS if p.parent.parent.name == "kernels"]) >= 17
    for path in TOMLS:
        data = tomllib.loads(path.read_text())
        errors = list(validator.iter_errors(data))
        assert not errors, f"{path.relative_to(ROOT)}: {[e.message for e in errors]}"
        config.load_file(path)                  # and the loader takes it


def test_the_defaults_validate(validator):
    d = config.Config()
    data = {s: {f.name: getattr(getattr(d, s), f.name) for f in fields(cls)
                if getattr(getattr(d, s), f.name) is not None}
            for s, cls in config._SECTIONS.items()}
    data["harness"]["env"] = {}
    data = json.loads(json.dumps(data))          # tuples -> lists, as TOML gives them
    assert not list(validator.iter_errors(data))


@pytest.mark.parametrize("bad", [
    {"profile": {"collector": "nsys"}},
    {"profile": {"sampling_period": 4}},
    {"profile": {"sampling_period": 32}},
    {"profile": {"launch_count": 0}},
    {"profile": {"throughput": "yes"}},
    {"harness": {"timeout": 0}},
    {"harness": {"command": []}},
    {"harness": {"env": {"N": [1]}}},
    {"build": {"nvcc_flags": [1]}},
    {"build": {"unknown": 1}},
    {"advice": {"information": 0.9}},
    {"server": {"debounce_ms": -1}},
    {"profile": {"min_samples": -1}},
    {"verify": {"top": 21}},
    {"verify": {"budget_s": 0}},
    {"verify": {"pairs": 4}},
    {"nosuchsection": {}},
])
def test_schema_and_loader_reject_the_same(bad, validator):
    assert list(validator.iter_errors(bad)), bad
    with pytest.raises(ConfigError):
        config.from_mapping(bad)


@pytest.mark.parametrize("good", [
    {"build": {"command": "make -j"}, "harness": {"command": "./app --quick", "env": {"N": 4096}}},
    {"build": {"sources": "k.cu", "nvcc_flags": "-O3"}},
    {"profile": {"collector": "replay", "kernels": []}, "paths": {"source_map": {"/build": "."}}},
])
def test_schema_and_loader_accept_the_same(good, validator):
    assert not list(validator.iter_errors(good)), good
    config.from_mapping(good)
