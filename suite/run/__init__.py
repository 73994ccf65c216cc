"""The parent side of a run, which never imports torch: preflight checks, launching one worker
per cell, progress, resume, the run's lock; and what noxfile.py's sessions do: the local
builds' virtualenvs (`venv`), the images (`images`) and their runs (`docker`, `containers`),
the container path run for real (`e2e`), the lock files (`requirements`), the sessions'
flags, one-line errors and redacted output (`session`)."""
