"""The merged tables, one module per table family; each builds `Table`s from the study.

- `cells`: what a cell holds (duration, peak memory, speed-up, guide figure, failure) and how it
  reads in Markdown and CSV; the legends.
- `table`: `Table` and `Column`, Markdown and CSV rendering, file names.
- `compile_vs_eager`, `stable_vs`, `modes`, `memory`, `summary`: the families.

A new table family is a new module here, added to `suite.report.publish`.
"""
