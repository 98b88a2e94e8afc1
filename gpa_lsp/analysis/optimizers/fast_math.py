"""Fast Math: stalls inside the CUDA math library's slow paths (precise division, sin/cos, pow...)."""

from __future__ import annotations

import re

from ..model import Fix
from .base import Match, Optimizer, match_edges

_MATH_FN = re.compile(r"internal|__cuda_sm\d+x?_|__nv_|slowpath|rcp_|div_rn|sqrt_rn|trig_reduction", re.I)
_MATH_HEADER = re.compile(r"(math_functions|device_functions|crt/|cuda_fp|sm_\d+_intrinsics)", re.I)


_FN_CACHE: dict[str, bool] = {}
_FILE_CACHE: dict[str, bool] = {}


def in_math_library(site) -> bool:
    f = site.function
    fn = _FN_CACHE.get(f.name)
    if fn is None:
        fn = _FN_CACHE[f.name] = (not f.entry) and bool(_MATH_FN.search(f.name))
    if fn:
        return True
    loc = site.instruction.loc
    if loc is None:
        return False
    hit = _FILE_CACHE.get(loc.file)
    if hit is None:
        hit = _FILE_CACHE[loc.file] = bool(_MATH_HEADER.search(loc.file))
    return hit


class FastMath(Optimizer):
    id = "fast_math"
    title = "Fast Math"
    suggestion = ("Time goes to precise math library paths (IEEE division, sqrt, sin/cos range reduction). "
                  "Build with --use_fast_math or call the intrinsics (__fdividef, __sinf, __expf) where the "
                  "precision allows.")

    def match(self, ctx) -> Match | None:
        if ctx.share("instruction_fetch") > 0.2:
            return None  # GPA: fetch-bound slow paths are Function Split's business
        def keep(e):
            site = ctx.site(e.use)
            return site is not None and in_math_library(site)
        return match_edges(ctx.edges, keep)

    def fix(self, ctx, match) -> Fix | None:
        return Fix("fast_math", None, None, {"flag": "--use_fast_math"})
