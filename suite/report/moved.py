"""What moved between two builds (or two runs): a change of speed-up split into its eager side
and its compiled side.

A speed-up is eager / compiled (the paired medians of the compiled cell's process), so from a
base to a new build it changes by

    new speed-up / base speed-up = (new eager / base eager) x (base compiled / new compiled)
                                 =  eager factor             x  compiled factor

exactly, for the durations shown. The eager factor is below 1 when eager got faster (which
lowers the speed-up), the compiled factor above 1 when compiled got faster (which raises it):
"the speed-up fell because eager got faster" reads as an eager factor below 1 with a compiled
factor near 1. Each factor's interval comes from the two medians' 95% CIs, conservatively
(low / high, high / low: two processes, no samples to pair), and a side "moved" when its
interval excludes 1. The change's own interval comes from the two paired speed-ups' CIs.
The stable-vs tables (suite.report.tables.stable_vs) and `compare` (suite.compare.markdown)
both use this. Host side only; standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Side:
    """A median (ms) with its 95% CI (None where unknown)."""

    ms: float | None
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if self.ms is not None and not self.ms > 0:
            raise ValueError(f"a median must be > 0, not {self.ms}")


@dataclass(frozen=True)
class Factor:
    """A ratio with its interval (None where a CI is missing)."""

    value: float
    low: float | None = None
    high: float | None = None

    @property
    def moved(self) -> bool:
        """Its interval lies wholly above or below 1."""
        return self.low is not None and self.high is not None and (self.low > 1 or self.high < 1)


def _ratio(num: Side, den: Side) -> Factor | None:
    """num / den with the widest interval the two CIs allow."""
    if num.ms is None or den.ms is None:
        return None
    if None in (num.low, num.high, den.low, den.high) or not (den.low and den.high):
        return Factor(num.ms / den.ms)
    return Factor(num.ms / den.ms, num.low / den.high, num.high / den.low)  # type: ignore[operator]


@dataclass(frozen=True)
class SpeedupSplit:
    """new speed-up / base speed-up, and its two factors (see the module's docstring)."""

    change: Factor
    eager: Factor  # new eager / base eager: < 1, eager got faster (the speed-up falls)
    compiled: Factor  # base compiled / new compiled: > 1, compiled got faster (the speed-up rises)

    @staticmethod
    def of(
        base_eager: Side,
        base_compiled: Side,
        new_eager: Side,
        new_compiled: Side,
        base_speedup: Side | None = None,
        new_speedup: Side | None = None,
    ) -> SpeedupSplit | None:
        """The split, or None where a duration is missing. `base_speedup`, `new_speedup`: the
        paired speed-ups with their CIs, for the change's interval (else the factors' product)."""
        eager, compiled = _ratio(new_eager, base_eager), _ratio(base_compiled, new_compiled)
        if eager is None or compiled is None:
            return None
        value = eager.value * compiled.value
        low = high = None
        if base_speedup is not None and new_speedup is not None:
            paired = _ratio(new_speedup, base_speedup)
            if paired is not None:
                low, high = paired.low, paired.high
        return SpeedupSplit(Factor(value, low, high), eager, compiled)

    def moved(self) -> str:
        """Which side moved, in words: `eager faster`, `compiled slower`, `both: ...`, `neither`."""
        sides = []
        if self.eager.moved:
            sides.append("eager " + ("faster" if self.eager.value < 1 else "slower"))
        if self.compiled.moved:
            sides.append("compiled " + ("faster" if self.compiled.value > 1 else "slower"))
        if not sides:
            return "neither"
        return sides[0] if len(sides) == 1 else "both: " + ", ".join(sides)

    def text(self) -> str:
        """`0.80x = eager 0.78x [0.75, 0.81] · compiled 1.03x [0.98, 1.07]: eager faster`."""
        return f"{fmt(self.change)} = eager {fmt(self.eager)} · compiled {fmt(self.compiled)}: {self.moved()}"


def fmt(f: Factor) -> str:
    text = f"{f.value:.2f}x"
    return text + (f" [{f.low:.2f}, {f.high:.2f}]" if f.low is not None and f.high is not None else "")
