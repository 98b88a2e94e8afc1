"""What a verification found, as plain data on the advice (``Advice.verification``).

``status``:
  measured   timed on a GPU: ``speedup`` (median ratio), ``low``/``high`` (95% interval)
  static     compiled and compared, not timed: ``static_speedup`` re-estimated from what vanished
  unchanged  the fix compiles to the same code in the hot region: the compiler already does it
  no_build   the edited sources do not compile: the fix is not offered
  no_fix     the fix cannot be applied to the current text
"""

from __future__ import annotations

from dataclasses import dataclass

# below this measured ratio a change is "no gain" (timing noise on a quiet H100 is about 1%)
NO_GAIN = 1.02
STATUSES = ("measured", "static", "unchanged", "no_build", "no_fix")


@dataclass(frozen=True)
class StaticDiff:
    """The target function before and after the fix (counts over the whole function)."""

    changed: bool                         # any instruction differs (opcode, modifiers, order)
    hot_changed: bool                     # ... on a source line that has samples
    vanished: tuple[tuple[str, int], ...] = ()   # (opcode family, count) that the fix removed
    appeared: tuple[tuple[str, int], ...] = ()   # (opcode family, count) that the fix added
    vanished_samples: float = 0.0         # samples at vanished instructions + stalls that go with them
    registers: tuple[int, int] = (0, 0)   # before, after
    spills: tuple[int, int] = (0, 0)      # local loads+stores before, after
    instructions: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Verification:
    status: str
    fix: str = ""                          # the fix's title ("make '2.0' float ...")
    estimated: float = 1.0                 # the advisor's estimate before verification
    static_speedup: float | None = None    # re-estimated from what vanished (deleting fixes)
    speedup: float | None = None           # measured median ratio original / variant
    low: float | None = None               # 95% interval of the ratio
    high: float | None = None
    pairs: int = 0                         # interleaved (original, variant) runs timed
    device: str = ""
    note: str = ""                         # one line for the user
    diff: StaticDiff | None = None
    key: str = ""                          # store key (sources, fix, device)
    # the per-run figures (ns, timing.per_run) behind ``speedup``, round by round
    original_ns: tuple[float, ...] = ()
    variant_ns: tuple[float, ...] = ()

    @property
    def effective(self) -> float | None:
        """The figure that ranks the advice: measured, else re-estimated, else None (keep the estimate)."""
        if self.status == "measured":
            return self.speedup
        if self.status in ("unchanged", "no_build", "no_fix"):
            return 1.0
        return self.static_speedup

    @property
    def no_gain(self) -> bool:
        return self.status in ("unchanged", "no_build", "no_fix") or (
            self.status == "measured" and self.speedup is not None and self.speedup < NO_GAIN)

    def summary(self, device_short: str = "") -> str:
        """``measured 1.31x (1.28-1.34), est. 1.27x, H100`` / ``tried: no gain (...)``."""
        dev = f", {device_short}" if device_short else ""
        if self.status == "measured" and self.speedup is not None:
            rng = f" ({self.low:.2f}-{self.high:.2f})" if self.low and self.high else ""
            if self.speedup < 1.0 / NO_GAIN:
                return f"tried: slower (measured {self.speedup:.2f}x{rng}, estimated {self.estimated:.2f}x{dev})"
            if self.speedup < NO_GAIN:
                return f"tried: no gain (measured {self.speedup:.2f}x{rng}, estimated {self.estimated:.2f}x{dev})"
            return f"measured {self.speedup:.2f}x{rng}, est. {self.estimated:.2f}x{dev}"
        if self.status == "unchanged":
            return "tried: the compiler already produces this code (no change in the hot region)"
        if self.status == "no_build":
            return "tried: the edited sources do not compile"
        if self.status == "no_fix":
            return "the fix does not apply to the current text"
        if self.static_speedup is not None and self.static_speedup <= 1.0 and self.note:
            return f"compiled: no gain expected: {self.note}"
        if self.static_speedup is not None:
            return f"compiled: re-estimated {self.static_speedup:.2f}x from what the change removes (est. {self.estimated:.2f}x)"
        if self.note:
            return f"compiled: {self.note} (not timed)"
        return "compiled: the change alters the hot region (not timed)"


def short_device(name: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``H100``."""
    for word in name.replace("NVIDIA", "").split():
        if any(c.isdigit() for c in word) and any(c.isalpha() for c in word):
            return word
    return name.strip()
