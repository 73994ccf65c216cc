"""The GPU study (docs/gpu-study.md): the suite's own verbs run on a GPU held for a short window
(a spot instance, a time-limited allocation), each call under a deadline and resumable, and the
host side that turns what came back into a results folder.

- `plan`: the study as data: its steps in the order they matter; `estimate`: their cells and
  estimates by the schedule that runs them; `calibrate`: those estimates against what ran;
- `call`: one call on the GPU machine: the steps not yet done, under a deadline, packed in `--out`;
- `packing`: what a call leaves to bring back (one tarball written whole, the shape checked);
- `finish`: the host side: the calls' files (every attempt) into one results folder and its README;
- `cli`: `python -m suite gpu-study plan | call | finish`.

`plan`, `call` and `packing` run on the GPU machine's Python (standard library and PyYAML:
pyproject.toml's contract says so); `finish` needs pandas, matplotlib and pyarrow (the merge's).
"""
