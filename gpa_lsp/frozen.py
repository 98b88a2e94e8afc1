"""``frozen_new``: an instance of a frozen dataclass made without its generated ``__init__``.

Why: a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses), about 5 µs for nine fields against under 1 µs for filling the instance's
``__dict__`` at once. The analysis makes such records in bulk (a ``LineStats`` per source line,
a ``Loop`` per source loop: 10^4 on a large kernel). Only for classes with no ``__post_init__``,
no ``__slots__`` and no validation in ``__init__``; every field must be given (defaults included),
so the instance is the one ``__init__`` would make (same fields, ``==``, ``repr``, ``hash``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")

_FIELDS: dict[type, frozenset[str]] = {}
_new = object.__new__


def frozen_new(cls: type[T], **fields: Any) -> T:
    """``cls(**fields)`` for a frozen dataclass without ``__post_init__``, every field given."""
    names = _FIELDS.get(cls)
    if names is None:
        assert dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__") \
            and "__slots__" not in cls.__dict__, cls
        names = _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    if len(fields) != len(names):
        raise TypeError(f"frozen_new({cls.__name__}): fields {sorted(names ^ set(fields))} missing or unknown")
    obj = _new(cls)
    obj.__dict__.update(fields)
    return obj
