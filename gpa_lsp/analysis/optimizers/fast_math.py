"""Fast Math: stalls inside the CUDA math library's slow paths (precise division, sin/cos, pow...)."""

from __future__ import annotations

import re

from ..model import Fix
from .base import Match, Optimizer, match_edges

_MATH_FN = re.compile(r"internal|__cuda_sm\d+x?_|__nv_|slowpath|rcp_|div_rn|sqrt_rn|trig_reduction", re.I)
_MATH_HEADER = re.compile(r"(math_functions|device_functions|crt/|cuda_fp|sm_\d+_intrinsics)", re.I)


def in_math_library(site) -> bool:
    f = site.function
    if not f.entry and _MATH_FN.search(f.name):
        return True
    ins = site.instruction
    return ins.loc is not None and bool(_MATH_HEADER.search(ins.loc.file))


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
