"""Advice that has been tried: each mechanical fix compiled, compared and timed before it is ranked.

An estimate is a model's guess; the fix is a concrete edit that gpa-lsp can make. This package
makes the edit in a scratch copy (never the user's files), rebuilds, and checks it twice:

* statically (no GPU, ``static.py``): the variant's SASS against the original's: a hot region the
  compiler already produces drops the advice; instructions that carried samples and vanished give
  an estimate from the deletion model instead of the optimizer's match alone; a variant that does
  not compile is not offered.
* dynamically (GPU, trusted workspace, ``dynamic.py``): original and variant timed interleaved by
  the project's own harness, kernel durations from CUPTI activity records (``timing.py`` holds the
  protocol: median ratio, 95% interval, the 1.02x rule).

Results are kept by (sources, fix, device) in the bundle (``store.py``), so a replay with no GPU
shows them; ``apply.py`` puts them on the advice and re-ranks. The flow: ``runner.verify_report``.
"""
