"""What noxfile.py's sessions do, without nox: the local builds' virtualenvs (`venv`), the
images (`images`) and their runs (`docker`, `containers`), the container path run for real
(`containers_e2e`), the lock files (`requirements`), the benchmarks of the suite itself
(`trust`), the pinned tools (`toolpins`), and the sessions' runner, flags, one-line errors and
redacted output (`runner`). Host side, standard library and PyYAML only: nox imports it
without a virtualenv. It drives the run side (suite.run, by `python -m suite`) and is never
imported by it (pyproject.toml's import-linter contracts)."""
