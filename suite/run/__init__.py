"""The parent side of a run, which never imports torch: preflight checks, the path every cell
takes (`cell_path`: its worker through `launch`, its compile-cost processes, its rows), the
sweep (`runner`), progress, resume, the run's lock. What the nox sessions do (virtualenvs,
images, `docker run`) is suite.sessions, which this package never imports."""
