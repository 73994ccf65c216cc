"""Regressions between two runs: for each cell both ran, the ratio of medians new / base with an
interval, the paired speed-up's change and the compile time's, each judged against a threshold.

Host side only. The raw CSVs keep each cell's median and its 95% CI, not the samples, so the
ratio's interval is built from the two CIs: [new low / base high, new high / base low]. If the
two runs are independent and each CI covers its true median with probability 0.95, both do with
probability >= 0.9025, and then the true ratio lies inside. The CIs cover the noise within a
run, not the machine's drift between runs: the threshold is the floor for that, and a cell
timed on an unhealthy machine (suite.measure.health: busy, steal, throttled, ...) in either
run is not judged slower, only listed ("suspect"). The paired speed-up (eager / compiled,
timed interleaved in one process) cancels the machine's drift, so its change is judged in
every cell: a compiled function slowed against its own eager calls fails the gate even on a
busy machine. Compile time is one sample per cell: its own, wider threshold and a floor in
seconds. The rates this rule gives on A/A and slowed runs: docs/merge.md, `suite calibrate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from suite.report.load import Loaded
from suite.report.study import Gpu, Measurement, Setup, measurement_of, ratio_interval
from suite.results import CELL_COLUMNS, FAILED_STATUSES, STATUS_WORDS

# A cell across two runs; the build is added when a run holds several builds.
MATCH_COLUMNS: tuple[str, ...] = tuple(c for c in CELL_COLUMNS if c != "build")

REGRESSION = "regression"
LESS_SPEEDUP = "less speed-up"
COMPILE_REGRESSION = "slower compile"
SUSPECT = "suspect"
ACCURACY_REGRESSION = "accuracy regression"
NEWLY_FAILING = "newly failing"
IMPROVEMENT = "improvement"
FIXED = "fixed"
UNCHANGED = "unchanged"
NO_INTERVAL = "no interval"
NOT_COMPARABLE = "not comparable"
# Verdicts that make `compare` exit 1.
FAILING_VERDICTS: tuple[str, ...] = (
    REGRESSION,
    LESS_SPEEDUP,
    COMPILE_REGRESSION,
    ACCURACY_REGRESSION,
    NEWLY_FAILING,
)
THRESHOLD = 0.05  # medians and speed-ups
COMPILE_THRESHOLD = 0.25  # compile time: one sample per cell, so a wider band
COMPILE_FLOOR_S = 1.0  # and at least this many seconds more
SECTIONS: tuple[tuple[str, str], ...] = (
    (REGRESSION, "Regressions (slower beyond the threshold, interval above 1)"),
    (
        LESS_SPEEDUP,
        "Less speed-up (compiled slower against its own eager calls: the paired speed-up fell beyond "
        "the threshold, interval above 1)",
    ),
    (COMPILE_REGRESSION, "Slower compile (beyond the compile threshold and floor)"),
    (
        SUSPECT,
        "Suspect: slower, but timed on an unhealthy machine in either run (not counted; run again on a "
        "quiet machine)",
    ),
    (
        NEWLY_FAILING,
        f"Newly failing (ok in base, {' / '.join(STATUS_WORDS[s] for s in FAILED_STATUSES)} in new)",
    ),
    (ACCURACY_REGRESSION, "Accuracy regressions (compiled output passed in base, fails in new)"),
    (IMPROVEMENT, "Improvements (faster beyond the threshold, interval below 1)"),
    (FIXED, "Fixed (failed in base, ok in new)"),
    (NO_INTERVAL, "Not judged: a median without a CI"),
    (NOT_COMPARABLE, "Not comparable (failed or skipped in both, or skipped in one)"),
    (UNCHANGED, "Unchanged (within the threshold, or the interval includes 1)"),
)


@dataclass(frozen=True)
class Rule:
    """The gate's thresholds (docs/merge.md gives the rates they were chosen from)."""

    threshold: float = THRESHOLD
    compile_threshold: float = COMPILE_THRESHOLD
    compile_floor_s: float = COMPILE_FLOOR_S


@dataclass(frozen=True)
class CellChange:
    """One cell in both runs, and what changed."""

    key: tuple[str, ...]
    base_build: str
    new_build: str
    base: Measurement
    new: Measurement
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str

    @property
    def unhealthy(self) -> bool:
        return self.base.unhealthy or self.new.unhealthy


@dataclass(frozen=True)
class Comparison:
    changes: tuple[CellChange, ...]
    only_base: tuple[tuple[str, ...], ...]
    only_new: tuple[tuple[str, ...], ...]
    key_columns: tuple[str, ...]
    threshold: float
    rule: Rule = Rule()

    @property
    def failed(self) -> bool:
        return any(c.verdict in FAILING_VERDICTS for c in self.changes)

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.changes)


def speedup_change(base: Measurement, new: Measurement) -> tuple[float, float, float] | None:
    """base speed-up / new speed-up (> 1: compiled lost ground against eager), with the interval
    the two paired CIs allow; None where either has no speed-up with a CI."""
    figures = (base.speedup, base.speedup_low, base.speedup_high)
    figures += (new.speedup, new.speedup_low, new.speedup_high)
    if any(f is None or f <= 0 for f in figures):
        return None
    b, b_lo, b_hi, n, n_lo, n_hi = figures  # type: ignore[misc]
    return b / n, b_lo / n_hi, b_hi / n_lo


def compile_change(base: Measurement, new: Measurement, rule: Rule) -> bool:
    """Compile time beyond its threshold and its floor in seconds."""
    b, n = base.compile_s, new.compile_s
    if b is None or n is None or b <= 0:
        return False
    return n / b > 1 + rule.compile_threshold and n - b > rule.compile_floor_s


def judge(
    base: Measurement, new: Measurement, threshold: float, rule: Rule | None = None
) -> tuple[str, float | None, float | None, float | None]:
    """The verdict for one cell, with the ratio new/base and its interval when both are ok."""
    rule = rule or Rule(threshold=threshold)
    if base.ok and new.status in FAILED_STATUSES:
        return NEWLY_FAILING, None, None, None
    if new.ok and base.status in FAILED_STATUSES:
        return FIXED, None, None, None
    if not (base.ok and new.ok) or base.median_ms is None or new.median_ms is None:
        return NOT_COMPARABLE, None, None, None
    ratio = new.median_ms / base.median_ms
    low, high = ratio_interval(new, base)
    if new.accuracy_failed and not base.accuracy_failed:
        return ACCURACY_REGRESSION, ratio, low, high
    pair = speedup_change(base, new)
    if pair is not None and pair[0] > 1 + threshold and pair[1] > 1:  # paired: drift cancels
        return LESS_SPEEDUP, ratio, low, high
    slower = low is not None and ratio > 1 + threshold and low > 1
    compile_slower = compile_change(base, new, rule)
    if slower or compile_slower:
        if base.unhealthy or new.unhealthy:
            return SUSPECT, ratio, low, high
        return (REGRESSION if slower else COMPILE_REGRESSION), ratio, low, high
    if low is None or high is None:
        return NO_INTERVAL, ratio, low, high
    if ratio < 1 - threshold and high < 1:
        return IMPROVEMENT, ratio, low, high
    return UNCHANGED, ratio, low, high


def _index(loaded: Loaded, columns: Sequence[str]) -> dict[tuple[str, ...], tuple[str, Measurement]]:
    out = {}
    for r in loaded.frame.itertuples(index=False):
        out[tuple(str(getattr(r, c)) for c in columns)] = (r.build, measurement_of(r))
    return out


def compare(base: Loaded, new: Loaded, threshold: float, rule: Rule | None = None) -> Comparison:
    """Match cells (ignoring the build when each run has one build, else by build too) and judge."""
    rule = rule or Rule(threshold=threshold)
    one_build_each = base.frame["build"].nunique() == 1 and new.frame["build"].nunique() == 1
    columns = MATCH_COLUMNS if one_build_each else ("build", *MATCH_COLUMNS)
    b, n = _index(base, columns), _index(new, columns)
    changes = []
    for key in b.keys() & n.keys():
        (bb, bm), (nb, nm) = b[key], n[key]
        verdict, ratio, low, high = judge(bm, nm, threshold, rule)
        changes.append(CellChange(key, bb, nb, bm, nm, ratio, low, high, verdict))
    bs = columns.index("batch_size")

    def order(key: tuple[str, ...]) -> tuple[object, ...]:
        return (*key[:bs], int(key[bs]), *key[bs + 1 :])

    changes.sort(key=lambda c: order(c.key))
    return Comparison(
        changes=tuple(changes),
        only_base=tuple(sorted(b.keys() - n.keys(), key=order)),
        only_new=tuple(sorted(n.keys() - b.keys(), key=order)),
        key_columns=columns,
        threshold=threshold,
        rule=rule,
    )


# ---------------------------------------------------------------------------------------
# The Markdown report.


def _cell_label(columns: Sequence[str], key: tuple[str, ...]) -> list[str]:
    k = dict(zip(columns, key, strict=True))
    setup = Setup(k["dtype"], k["scenario"], k["weights"], k["variant"]).label
    where = Gpu(k["device"], k["gpu_name"]).label
    label = [f"{k['task']}/{k['model']}", k["batch_size"], k["mode"], where, setup]
    return [k["build"], *label] if "build" in k else label


def _label_header(columns: Sequence[str]) -> list[str]:
    head = ["Task/Model", "Batch Size", "Mode", "GPU", "Setup"]
    return ["Build", *head] if "build" in columns else head


def _median(m: Measurement) -> str:
    if not m.ok:
        return STATUS_WORDS[m.status]
    if m.median_ms is None:
        return "—"
    ci = f" [{m.ci_low_ms:.3f}, {m.ci_high_ms:.3f}]" if m.ci_low_ms and m.ci_high_ms else ""
    return f"{m.median_ms:.3f}{ci}"


def _ratio(c: CellChange) -> str:
    if c.ratio is None:
        return "—"
    interval = f" [{c.low:.3f}, {c.high:.3f}]" if c.low is not None and c.high is not None else ""
    return f"{c.ratio:.3f}x{interval}"


def _change(c: CellChange) -> str:
    return "—" if c.ratio is None else f"{(c.ratio - 1) * 100:+.1f}%"


def _speedups(c: CellChange) -> str:
    b, n = c.base.speedup, c.new.speedup
    if b is None or n is None or not (c.base.ok and c.new.ok):
        return "—"
    pair = speedup_change(c.base, c.new)
    interval = f" [{pair[1]:.3f}, {pair[2]:.3f}]" if pair else ""
    return f"{b:.2f}x -> {n:.2f}x ({b / n:.3f}{interval})"


def _compile(c: CellChange) -> str:
    b, n = c.base.compile_s, c.new.compile_s
    if b is None or n is None or not (c.base.ok and c.new.ok):
        return "—"
    return f"{b:.1f} -> {n:.1f}" + (f" ({n / b - 1:+.0%})" if b > 0 else "")


def _health(c: CellChange) -> str:
    if not (c.base.health or c.new.health):
        return "—"
    return f"{c.base.health or '—'} / {c.new.health or '—'}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]


def verdict_line(cmp: Comparison) -> str:
    """One line: REGRESSED or OK, and the counts."""
    regressed = sum(cmp.count(v) for v in FAILING_VERDICTS)
    return (
        f"{'REGRESSED' if cmp.failed else 'OK'}: {regressed} failing change(s) "
        f"({cmp.count(REGRESSION)} slower, {cmp.count(NEWLY_FAILING)} newly failing, "
        f"{cmp.count(ACCURACY_REGRESSION)} accuracy), {cmp.count(LESS_SPEEDUP)} less speed-up, "
        f"{cmp.count(COMPILE_REGRESSION)} slower compile; {cmp.count(SUSPECT)} suspect (unhealthy "
        f"machine, not counted); {cmp.count(IMPROVEMENT)} improvement(s), "
        f"{cmp.count(FIXED)} fixed, {cmp.count(UNCHANGED)} unchanged; {len(cmp.changes)} cell(s) matched, "
        f"{len(cmp.only_base)} only in base, {len(cmp.only_new)} only in new"
    )


def render(
    cmp: Comparison, base_inputs: Sequence[Path], new_inputs: Sequence[Path], base: Loaded, new: Loaded
) -> str:
    """The report: a verdict line, then one section per kind of change, then unmatched cells."""
    t, r = cmp.threshold, cmp.rule
    unhealthy = sum(c.unhealthy for c in cmp.changes)
    lines = [
        "# Regression report",
        "",
        f"- Base: {', '.join(map(str, base_inputs))} (builds: {', '.join(base.frame['build'].unique())})",
        f"- New: {', '.join(map(str, new_inputs))} (builds: {', '.join(new.frame['build'].unique())})",
        f"- Cells matched on: {', '.join(cmp.key_columns)}"
        + ("" if "build" in cmp.key_columns else " (each run has one build, so builds may differ)"),
        f"- Threshold {t:.1%}: a regression is a new/base ratio of medians above {1 + t:.3f} whose interval "
        f"lies above 1; an improvement, below {1 - t:.3f} with the interval below 1.",
        "- Interval: [new CI low / base CI high, new CI high / base CI low] from each median's 95% CI "
        "(conservative; the CSVs keep no samples).",
        f"- Less speed-up: base speed-up / new speed-up above {1 + t:.3f} with its interval above 1 (the "
        "speed-ups are paired within each run, so the machine's drift cancels: judged on any machine).",
        f"- Slower compile: compile_s up by more than {r.compile_threshold:.0%} and {r.compile_floor_s:g} s.",
        f"- Health: {unhealthy} matched cell(s) timed on an unhealthy machine in either run (busy, steal, "
        "throttled, clock-varied, shared-gpu): slower medians or compiles there are 'suspect', not "
        "regressions.",
        "",
        f"**{verdict_line(cmp)}**",
    ]
    header = [*_label_header(cmp.key_columns), "base median (ms) [95% CI]", "new median (ms) [95% CI]"]
    header += ["new / base [interval]", "change", "speed-up base -> new (ratio [interval])"]
    header += ["compile s base -> new", "health base / new"]
    for verdict, title in SECTIONS:
        rows = [c for c in cmp.changes if c.verdict == verdict]
        if not rows:
            continue
        lines += ["", f"## {title}: {len(rows)}", ""]
        lines += _table(
            header,
            [
                [
                    *_cell_label(cmp.key_columns, c.key),
                    _median(c.base),
                    _median(c.new),
                    _ratio(c),
                    _change(c),
                    _speedups(c),
                    _compile(c),
                    _health(c),
                ]
                for c in rows
            ],
        )
    for title, keys in (("Only in base", cmp.only_base), ("Only in new", cmp.only_new)):
        if keys:
            lines += ["", f"## {title}: {len(keys)}", ""]
            lines += _table(_label_header(cmp.key_columns), [_cell_label(cmp.key_columns, k) for k in keys])
    for name, loaded in (("base", base), ("new", new)):
        if loaded.skipped or loaded.superseded:
            lines += ["", f"## Input notes ({name})", "", *(f"- {line}" for line in loaded.report())]
    return "\n".join(lines) + "\n"
