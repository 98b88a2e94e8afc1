"""sass/patterns.py: SASS patterns are pure functions of a Function, computed once and kept on it."""

from __future__ import annotations

import dataclasses

from gpa_lsp.sass import patterns


def test_a_pattern_is_computed_once_per_function(nested_program):
    f = max(nested_program.functions, key=lambda fn: len(fn.instructions))
    calls: list[str] = []

    @patterns.function_pattern
    def count(function):
        calls.append(function.name)
        return len(function.instructions)

    assert count(f) == count(f) == len(f.instructions)
    assert calls == [f.name]
    assert patterns.last_barriers(f) is patterns.last_barriers(f)
    assert len(patterns.last_barriers(f)) == len(f.instructions)
    # kept on the object, not in its fields: an equal copy is still equal, and computes its own
    copy = dataclasses.replace(f)
    assert copy == f
    assert count(copy) == len(f.instructions) and calls == [f.name, f.name]
