"""The parent side of a run, which never imports torch: preflight checks, launching one worker
per cell, progress, resume, the run's lock, the docker command lines of the containers."""
