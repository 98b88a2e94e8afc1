"""The advisor: blame sampled stalls on their causes, match optimizers, estimate speedups.

``analyze(programs, profile)`` and ``advise_bundle(path)`` (gpa_lsp.analysis.advisor) return a
:class:`~gpa_lsp.analysis.model.Report`; ``gpa_lsp.analysis.report`` renders it.
"""

from .advisor import advise_bundle, analyze

__all__ = ["advise_bundle", "analyze"]
