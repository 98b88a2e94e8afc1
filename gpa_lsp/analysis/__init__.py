"""The advisor: blame sampled stalls on their causes, match optimizers, estimate speedups.

``analyze(programs, profile)`` and ``advise_bundle(path)`` (gpa_lsp.analysis.advisor) return a
:class:`~gpa_lsp.analysis.model.Report`; ``gpa_lsp.analysis.report`` renders it.

Why the two names are resolved lazily (PEP 562): importing any module of this package (the
language server imports ``analysis.model`` for the Report it shows) runs this file, and the
advisor pulls in every optimizer, the blamer and the SASS model. The server process itself never
analyses (its worker does), so it must not pay for, or hold, the advisor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .advisor import advise_bundle, analyze

__all__ = ["advise_bundle", "analyze"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import advisor    # deferred on purpose: see the module docstring
        return getattr(advisor, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
