"""How heavy the pages are, and how soon they answer: `nox -s pages-bench` (or
`python -m tools.pages.bench`). A benchmark, not a test: it prints figures.

It generates a full-profile run (12 models x batch 1/4/16 x eager, default, reduce-overhead: 108
cells a build, two builds; tools.pages.sample), merges it, and a year of history (the
contract's frames, 365 nights of those cells on two build lines), writes both pages, then opens
each in headless Chromium `--repeat` times, alternating with a baseline page (plotly.js and one
small chart) whose time says how busy the machine is. Per page: its weight (the HTML and the
plotly.js beside it: all it loads), the time from navigation to ready (the charts in view drawn,
the page answering: body[data-ready]), the CPU time the page's main thread spent until then
(Chromium's ThreadTime: on a shared machine, what an idle one would take), and the time to draw
every chart of the page.
Targets (docs/pages.md): the run page under 5 MB and 2 s, the history page under 10 MB and 4 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from suite.report.pages.assets import PLOTLY_FILE, ship_plotly
from suite.report.pages.history_page import write_history_page
from tools.pages.browser import chromium
from tools.pages.merge import merge
from tools.pages.sample import SampleRun, sample_history, write_sample_run

BASELINE = f"""<!doctype html><html><head><meta charset="utf-8"><title>baseline</title></head>
<body><div id="c"></div><script src="{PLOTLY_FILE}"></script><script>
Plotly.newPlot("c", [{{type: "scatter", x: [1, 2, 3], y: [2, 1, 3]}}], {{height: 300}})
  .then(() => requestAnimationFrame(() => {{ window.__pageReadyMs = performance.now();
    document.body.dataset.ready = "true"; }}));
window.PG = {{ drawAll: () => Promise.resolve() }};
</script></body></html>
"""
TARGETS = {"run": (5.0, 2.0), "history": (10.0, 4.0)}  # MB, seconds


def weight_mb(page: Path) -> float:
    return (page.stat().st_size + (page.parent / PLOTLY_FILE).stat().st_size) / 1e6


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def pages(folder: Path, nights: int, history_page: Path | None = None) -> dict[str, Path]:
    """The generated run's page, the year's history page (or the one given: `suite history html`
    of a real store) and the baseline page."""
    run = write_sample_run(folder / "run", SampleRun())
    merge(run, run)
    if history_page is not None:
        history = history_page
    else:
        started = time.perf_counter()
        history = write_history_page(sample_history(nights=nights), folder / "history")
        print(f"history page written in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    (folder / "baseline").mkdir()
    ship_plotly(folder / "baseline")
    baseline = folder / "baseline" / "index.html"
    baseline.write_text(BASELINE, encoding="utf-8")
    return {"baseline": baseline, "run": run / "tables" / "index.html", "history": history}


def measure(paths: dict[str, Path], repeat: int) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {n: {"ready": [], "all": [], "cpu": []} for n in paths}
    with chromium() as browser:
        for _ in range(repeat):
            for name, path in paths.items():  # alternating: a drift of the machine hits each alike
                cdp: dict[str, Any] = {}

                def metrics_on(context: Any, page: Any, cdp: dict[str, Any] = cdp) -> None:
                    cdp["session"] = context.new_cdp_session(page)
                    cdp["session"].send("Performance.enable")

                with browser.open(path, before=metrics_on) as (page, problems):
                    times[name]["ready"].append(page.evaluate("window.__pageReadyMs") / 1000)
                    metrics = {
                        m["name"]: m["value"]
                        for m in cdp["session"].send("Performance.getMetrics")["metrics"]
                    }
                    times[name]["cpu"].append(metrics["ThreadTime"])  # the page's main thread, CPU s
                    started = time.perf_counter()
                    page.evaluate("() => PG.drawAll()")
                    times[name]["all"].append(time.perf_counter() - started)
                    if problems.all():
                        raise SystemExit(f"{path}: {problems.all()}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.pages.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="openings of each page (default: %(default)s)")
    parser.add_argument("--nights", type=int, default=365, help="nights of history (default: %(default)s)")
    parser.add_argument(
        "--history-page", type=Path, default=None, help="measure this page (`suite history html` of a store)"
    )
    args = parser.parse_args(argv)
    print(f"load average before: {load()} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        paths = pages(Path(tmp), args.nights, args.history_page)
        times = measure(paths, args.repeat)
        print(f"load average after: {load()}")
        head = f"ready (s), median of {args.repeat} [min, max]"
        print(
            f"\n| page | weight (MB) | {head} | / baseline's | main-thread CPU until ready (s) "
            "| every chart drawn (s) | target |"
        )
        print("|---|---|---|---|---|---|---|")
        base = statistics.median(times["baseline"]["ready"])
        for name, path in paths.items():
            ready, every = times[name]["ready"], times[name]["all"]
            target = TARGETS.get(name)
            aim = f"< {target[0]:g} MB, < {target[1]:g} s" if target else "(the machine's pace)"
            spread = f"{statistics.median(ready):.2f} [{min(ready):.2f}, {max(ready):.2f}]"
            ratio, drawn = statistics.median(ready) / base, statistics.median(every)
            cpu = statistics.median(times[name]["cpu"])
            cells = (f"{weight_mb(path):.2f}", spread, f"{ratio:.2f}", f"{cpu:.2f}", f"{drawn:.2f}", aim)
            print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
