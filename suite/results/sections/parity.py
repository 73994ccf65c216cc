"""The parity section: the task's answers against float32 eager's on the same inputs (`precision`
rows, suite.measure.parity; compiled rows of the other inference scenarios from their accuracy
pass). Standard library only."""

from __future__ import annotations

from suite.results.sections.accuracy import FAIL, PASS
from suite.results.sections.base import NUMBER, Column, Section, counted, extra, extra_timed


def _share(name: str, doc: str) -> Column:
    return extra_timed(name, "", doc, positive=False)


SECTION = Section(
    name="parity",
    title="Parity: the task's answer",
    about="`precision` rows ([precision.md](precision.md)): the task's answers against float32 eager's "
    "on the same inputs. Compiled rows of the other inference scenarios (`inference`, `pipeline`, "
    "`serving`, `mixed-resolution`) fill them too, from their accuracy pass: the compiled function's "
    "answers against eager's (at the row's dtype) on the row's own input, the batch's images "
    "(`parity_note` says which); empty on other rows.",
    columns=(
        Column(
            "parity",
            contract=False,
            timing=True,
            choices=(PASS, FAIL),
            doc="`pass` / `fail`: the task's parity rule (the `parity_*` settings of `matrix.yaml`)",
        ),
        counted("parity_inputs", "images judged: inputs (the photograph and its 5 derivations) x batch size"),
        _share(
            "parity_top1",
            "classification: share of images whose top-1 class is float32 eager's (ties, which the "
            "rule counts as agreeing, not included: [precision.md](precision.md))",
        ),
        _share("parity_top5", "classification: mean share of float32 eager's top-5 classes kept"),
        _share(
            "parity_box_iou",
            "detection: mean IoU of float32 eager's 10 most confident boxes with their matches",
        ),
        _share("parity_labels", "detection: share of those boxes whose match has the same label"),
        _share("parity_mask_iou", "segmentation: mean IoU of the label maps over the classes shown"),
        Column(
            "parity_max_abs_diff",
            NUMBER,
            contract=False,
            timing=True,
            nonfinite=True,
            doc="max \\|diff\\| of every floating output against float32 eager's (`nan` / `inf` as "
            "`max_abs_diff`)",
        ),
        _share("parity_scaled_diff", "max over outputs of \\|diff\\| / max(1, max \\|float32 eager\\|)"),
        _share(
            "parity_diff_bound",
            "the most `parity_scaled_diff` may be: max(`tolerance`, `parity_max_eps` x the dtype's "
            "epsilon; an autocast row's is its autocast dtype's)",
        ),
        extra(
            "parity_note",
            "what was judged (inputs, batch; an autocast row: its `torch.autocast` device and dtype; "
            "top-1 changes that were ties in the row's dtype; a planted test fault)",
        ),
    ),
)
