"""The GPU study (docs/gpu-study.md): the suite's own verbs run on a lent GPU machine inside the
device tool's limits, and the host side that turns what came back into a results folder.

- `plan`: the study as data: its steps in the order they matter, their cells and estimates;
- `call`: one call on the lent machine: the steps not yet done, under a deadline, packed for `$OUT`;
- `packing`: what the device tool brings back (one tarball written whole, the shape checked);
- `finish`: the host side: the calls' files (every attempt) into one results folder and its README;
- `cli`: `python -m suite gpu-study plan | call | finish`.

`plan`, `call` and `packing` run on the lent machine's Python (standard library and PyYAML:
pyproject.toml's contract says so); `finish` needs pandas, matplotlib and pyarrow (the merge's).
"""
