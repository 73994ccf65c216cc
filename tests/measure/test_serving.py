"""The serving scenario (docs/serving.md): the batcher and the search on a fake model whose service
times are known (queueing theory says what the latencies must be), the early-stopping rule, the
`serving` settings refused in one line naming the field, and one real search on a tiny ResNet."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from suite.errors import UsageError
from suite.measure import loadgen
from suite.spec import load_matrix
from suite.spec.expand import Filters, expand
from suite.spec.settings import Serving, SettingError

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"


def test_buckets_pad_to_a_few_sizes() -> None:
    assert loadgen.buckets(1) == (1,)
    assert loadgen.buckets(8) == (1, 2, 4, 8)
    assert loadgen.buckets(12) == (1, 2, 4, 8, 12)
    assert loadgen.bucket_of(3, loadgen.buckets(12)) == 4 and loadgen.bucket_of(9, (1, 2, 4, 8, 12)) == 12


def test_arrivals_scale_with_the_rate_and_come_in_bursts() -> None:
    gaps = loadgen.unit_gaps(4000, seed=3)
    slow, fast = (loadgen.arrival_times(gaps, rate, 1, 4000) for rate in (100.0, 200.0))
    assert fast == pytest.approx([t / 2 for t in slow])  # the same sequence, twice as fast
    assert 4000 / (slow[-1] / 1000) == pytest.approx(100.0, rel=0.05)
    bursty = loadgen.arrival_times(gaps, 100.0, 4, 4000)
    assert len(bursty) == 4000 and bursty[0] == bursty[3] < bursty[4]
    assert 4000 / (bursty[-1] / 1000) == pytest.approx(100.0, rel=0.1)


def test_one_server_no_batching_is_an_md1_queue() -> None:
    """Poisson arrivals at half the capacity of a 10 ms server: mean latency 10 + 5 ms
    (Pollaczek-Khinchine: wait = rho s / (2 (1 - rho)))."""
    times = loadgen.arrival_times(loadgen.unit_gaps(8000, 1), 50.0, 1, 8000)
    trial = loadgen.run_trial(lambda n: 10.0, loadgen.Batcher(1, 0.0, 10**6), times, 1e9)
    assert trial.stopped == "early pass" and trial.finished >= 2000  # nothing over: passes at a quarter
    assert statistics.mean(trial.latencies_ms) == pytest.approx(15.0, rel=0.1)
    assert min(trial.latencies_ms) == 10.0 and trial.dropped == 0 and trial.mean_batch == 1.0


def test_the_batcher_waits_for_a_batch_then_dispatches() -> None:
    sizes: list[int] = []

    def serve(n: int) -> float:
        sizes.append(n)
        return 5.0

    # 4 requests together: one full batch at once; then a lone one waits max_wait (3 ms)
    times = [0.0, 0.0, 0.0, 0.0, 100.0]
    trial = loadgen.run_trial(serve, loadgen.Batcher(4, 3.0, 16), times, 1e9)
    assert sizes == [4, 1] and trial.latencies_ms == [5.0, 5.0, 5.0, 5.0, 8.0]
    # a queue of 4 while the server is busy: the 5th and 6th to arrive during a batch are dropped
    sizes.clear()
    times = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    trial = loadgen.run_trial(serve, loadgen.Batcher(1, 0.0, 4), times, 1e9)
    assert trial.dropped == 2 and trial.over == 2 and len(trial.latencies_ms) == 5


def test_early_stopping_by_the_binomial_bound() -> None:
    assert loadgen.early_verdict(99, 50, 4000) == ""  # too few requests yet (at least a quarter)
    assert loadgen.early_verdict(1000, 0, 4000) == "pass"  # 0.99^1000 < 1%
    assert loadgen.early_verdict(1000, 25, 4000) == "fail"  # P(X >= 25 | 1000, 1%) << 1%
    assert loadgen.early_verdict(1000, 10, 4000) == ""  # about 1% over: undecided
    assert loadgen.early_verdict(4000, 10, 4000) == ""  # the last request: the point estimate decides
    assert loadgen.binom_cdf(0, 100, 0.01) == pytest.approx(0.99**100)


def test_the_search_finds_the_rate_at_the_target() -> None:
    """Service 10 ms + 1 ms per image (bucketed): the rate found meets the target, one 5% above
    it did not, and both sit below the batcher's capacity."""

    def serve(n: int) -> float:
        return 10.0 + loadgen.bucket_of(n, loadgen.buckets(8))

    capacity = 8 * 1000 / 18
    found = loadgen.search(serve, loadgen.Batcher(8, 2.0, 64), 60.0, loadgen.Load(2000), capacity)
    best = found.best
    assert best is not None and best.passed and best.percentile(0.99) <= 60.0
    failed = min(t.rate_per_s for t in found.trials if not t.passed)
    assert best.rate_per_s < failed <= best.rate_per_s * (1 + loadgen.RESOLUTION) + 1e-9
    assert 0.5 * capacity < best.rate_per_s < capacity
    # an impossible target: nothing passes, the search gives up after its trials
    never = loadgen.search(serve, loadgen.Batcher(8, 2.0, 64), 5.0, loadgen.Load(400), capacity)
    assert never.best is None and len(never.trials) == loadgen.MAX_TRIALS


def _matrix(tmp_path: Path, serving: str) -> Path:
    text = TINY.read_text().replace(
        "settings: {weights: random, iterations: 5, warmup: 1, timeout_s: 120}",
        f"settings: {{weights: random, iterations: 5, warmup: 1, timeout_s: 120, serving: {serving}}}",
    )
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("serving", "field"),
    [
        ("{max_batch: 0}", "serving.max_batch"),
        ("{p99_ms: -3}", "serving.p99_ms"),
        ("{max_wait_ms: fast}", "serving.max_wait_ms"),
        ("{max_batch: 8, max_queue: 4}", "serving.max_queue"),
        ("{target: 3}", "serving.target"),
        ("7", "serving"),
    ],
)
def test_a_bad_serving_setting_is_one_line_naming_the_field(tmp_path: Path, serving: str, field: str) -> None:
    with pytest.raises(UsageError) as err:
        load_matrix(_matrix(tmp_path, serving))
    message = str(err.value)
    assert "\n" not in message and f"profiles.tiny.settings.{field}:" in message


def test_serving_settings_load_and_cells_are_one_image_requests(tmp_path: Path) -> None:
    matrix = load_matrix(_matrix(tmp_path, "{p99_ms: 40, max_batch: 4, burst: 2}"))
    cells = expand(matrix, "tiny", "t", Filters(scenarios=("serving",), batch_sizes=(4,)))
    assert {c.batch_size for c in cells} == {1} and {c.scenario for c in cells} == {"serving"}
    serving = cells[0].settings.serving
    assert (serving.p99_ms, serving.max_batch, serving.burst, serving.queue) == (40.0, 4, 2, 64)
    assert type(cells[0]).from_json(cells[0].to_json()) == cells[0]
    with pytest.raises(SettingError):
        Serving(max_batch=True)  # type: ignore[arg-type]


def test_a_real_serving_cell_on_a_tiny_resnet() -> None:
    """The worker's path for a serving cell: inference figures, the batch sizes warmed up and
    timed (capacity), a lone request's p99 measured; a target below it (a lone request waits
    max_wait, 1 ms) is unreachable at any rate: no search, the floor in the row."""
    pytest.importorskip("torch")
    from suite.measure import worker

    (cell,) = [c for c in expand(load_matrix(TINY), "tiny", "t") if c.model.name == "TinyResNet"]
    serving = Serving(p99_ms=0.5, max_batch=4, max_wait_ms=1.0, requests=40)
    settings = replace(cell.settings, iterations=3, serving=serving, max_timing_s=0.01)
    row = worker.run(replace(cell, scenario="serving", settings=settings), "cpu")
    assert row["status"] == "ok", row.get("error")
    assert row["median_ms"] > 0 and row["serving_target_ms"] == 0.5 and row["serving_trials"] == 0
    assert row["serving_rate_per_s"] == 0.0 and row["serving_floor_ms"] > 1.0
    assert "max_batch 4 (sizes 1/2/4)" in row["serving_note"] and "target unreachable" in row["serving_note"]


def test_the_row_says_why_no_rate_met_the_target() -> None:
    """A search that found a rate: that trial's figures; one that found none: the lowest rate tried
    and its p99 (not a bare 0)."""
    from suite.measure.scenarios.serving import fields_of

    def serve(n: int) -> float:
        return 10.0 + loadgen.bucket_of(n, loadgen.buckets(8))

    batcher = loadgen.Batcher(8, 2.0, 64)
    found = loadgen.search(serve, batcher, 60.0, loadgen.Load(400), 8 * 1000 / 18)
    row = fields_of(found, "b", "serving.p99_ms", 0)
    assert row["serving_rate_per_s"] > 0 and row["serving_p99_ms"] <= 60.0 < row["serving_target_ms"] + 1
    assert "serving_lowest_rate_per_s" not in row
    assert row["serving_failed_rate_per_s"] == min(t.rate_per_s for t in found.trials if not t.passed)
    never = fields_of(loadgen.search(serve, batcher, 5.0, loadgen.Load(200), 400.0), "b", "x", 0)
    assert never["serving_rate_per_s"] == 0.0 and "serving_p99_ms" not in never
    assert never["serving_failed_rate_per_s"] is None
    assert never["serving_lowest_rate_per_s"] == 200.0 / 2 ** (loadgen.MAX_TRIALS - 1)
    assert never["serving_lowest_p99_ms"] > 5.0


def test_the_table_reads_rates_per_mode() -> None:
    pd = pytest.importorskip("pandas")
    from suite.report.tables.serving import serving_tables

    base = {"device": "cpu", "gpu_name": "CPU", "build": "b", "dtype": "float32", "scenario": "serving"}
    base |= {"task": "Image Classification", "model": "ResNet", "status": "ok", "error": ""}
    rows = [
        {
            **base,
            "mode": "eager",
            "serving_rate_per_s": 100.0,
            "serving_p99_ms": 9.0,
            "serving_target_ms": 10.0,
            "serving_failed_rate_per_s": 105.0,
        },
        {
            **base,
            "mode": "default",
            "serving_rate_per_s": 150.0,
            "serving_p99_ms": 9.5,
            "serving_target_ms": 10.0,
            "serving_failed_rate_per_s": 155.0,
        },
        {**base, "mode": "reduce-overhead", "status": "error", "error": "boom", "serving_rate_per_s": ""},
        {**base, "scenario": "inference", "mode": "eager", "serving_rate_per_s": ""},
    ]
    vit = {**base, "model": "ViT", "serving_rate_per_s": 0.0, "serving_target_ms": 10.0}
    rows += [
        {**vit, "mode": "eager", "serving_lowest_rate_per_s": 2.5, "serving_lowest_p99_ms": 40.0},
        {**vit, "mode": "default", "serving_floor_ms": 12.0, "serving_trials": 0},
        # a rate met the target and the budget ran out before a higher one was tried: a lower bound
        {**base, "model": "ConvNeXT", "mode": "eager", "serving_rate_per_s": 3.0, "serving_target_ms": 9.0},
    ]
    (table,) = serving_tables(pd.DataFrame(rows))
    assert [c.csv for c in table.columns] == ["Task/Model", "eager", "default", "reduce-overhead"]
    row, none, bound = table.rows
    assert row[1] == "100/s (p99 9 / 10 ms)" and row[2] == "150/s (p99 9.5 / 10 ms) · 1.50x"
    assert row[3] == "error: boom" and table.context[0]["default_images_per_s"] == 150.0
    assert none[1] == "none: p99 40 ms at 2.5/s, the lowest tried (target 10 ms)"
    assert none[2] == "none: a lone request's p99 12 ms > target 10 ms"
    assert bound[1] == ">= 3/s (target 9 ms)"
