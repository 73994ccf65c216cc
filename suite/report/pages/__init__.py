"""The pages a user opens in a browser: a run's page (`index.html` beside `tables.md`, written by
`merge`) and the history's page (`python -m suite history html`). Static files only: the data is
inlined, plotly.js (a kept, vendored bundle) is shipped beside each page, so a page opens offline.

- `assets`: the vendored plotly.js bundle (version, checksum) and our own page script and style;
- `shell`: one HTML page around a data object (inlined, escaped) and the scripts;
- `run_data`, `run_page`: the run page's data, read off the merge's tables and study;
- `history_page`: the history page from a `HistoryView`'s two frames (docs/pages.md).

Their development helpers (a headless browser, generated runs, the screenshot and the benchmark)
are the project's tools, apart from the suite: tools/pages.
"""
