"""The cells known to fail, per torch build, and how: the end-to-end tests check that each still
fails exactly so (if one starts to work, the test says so and the entry goes). Keys are
(torch version prefix, model, mode); `support.known` looks a row up."""

from __future__ import annotations

COMPILED = ("default", "reduce-overhead")
_NO_CODE = "'wrapper_descriptor' object has no attribute '__code__'"
MASKFORMER_DYNAMO = f"InternalTorchDynamoError (cause: AttributeError: {_NO_CODE})"

# Inference (tests/e2e/test_smoke_e2e.py) -> what the error column must contain.
SMOKE_FAILURES = {
    # transformers 4.31 declares MaskFormerPixelDecoderOutput without @dataclass; torch 2.0.1's
    # dynamo traces ModelOutput construction through the dataclass __init__ and cannot.
    ("2.0.", "Maskformer", mode): MASKFORMER_DYNAMO
    for mode in COMPILED
}

# Inference: compiled cells whose outputs disagree with eager's (status ok, accuracy fail).
SMOKE_ACCURACY_FAILURES = {
    # torch 2.0.1's inductor (CPU) turns Mask2Former's masked-attention decoder into NaNs after
    # the first calls (class logits and decoder states), and the first call already differs.
    ("2.0.", "Mask2former", mode)
    for mode in COMPILED
}

# Training steps (tests/e2e/test_train_e2e.py) -> what the error column must contain.
TRAIN_FAILURES = {
    # torch 2.0.1's compiled Mask2Former forward yields NaN costs for scipy's matcher (with or
    # without inductor's fallback_random); torch 2.13 trains it with eager's loss
    **{("2.0.", "Mask2former", m): "ValueError: matrix contains invalid numeric entries" for m in COMPILED},
    # as for inference: transformers 4.31's MaskFormerPixelDecoderOutput is not a dataclass
    **{("2.0.", "Maskformer", m): MASKFORMER_DYNAMO for m in COMPILED},
}
