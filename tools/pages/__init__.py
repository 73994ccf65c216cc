"""Development helpers of the pages (suite.report.pages), run by nox sessions and the tests:

- `browser`: headless Chromium as a user's browser, for the tests, the screenshot and the benchmark;
- `sample`: generated runs and histories (tests, benchmark); `merge`: the merge they make;
- `bench` (`nox -s pages-bench`), `screenshot` (`nox -s pages-screenshot`): scripts, not tests.
"""
