"""The pages a user opens in a browser: a run's page (`index.html` beside `tables.md`, written by
`merge`) and the history's page (`python -m suite history html`). Static files only: the data is
inlined, plotly.js (a kept, vendored bundle) is shipped beside each page, so a page opens offline.

- `assets`: the vendored plotly.js bundle (version, checksum) and our own page script and style;
- `shell`: one HTML page around a data object (inlined, escaped) and the scripts;
- `run_data`, `run_page`: the run page's data, read off the merge's tables and study;
- `history_page`: the history page from a `HistoryView`'s two frames (docs/pages.md);
- `browser`: headless Chromium as a user's browser, for the tests, the screenshot and the benchmark;
- `sample`: generated runs and histories (tests, benchmark); `merge`: the merge they make;
- `bench` (`nox -s pages-bench`), `screenshot` (`nox -s pages-screenshot`): scripts, not tests.
"""
