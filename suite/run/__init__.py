"""The parent side of a run, which never imports torch: preflight checks, launching one worker
per cell, progress, resume, the run's lock; and what noxfile.py's sessions do: the local
builds' virtualenvs (`venv`), the images and their runs (`docker`, `containers`), the lock
files (`requirements`), the sessions' flags and one-line errors (`session`)."""
