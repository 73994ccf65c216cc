"""torch.compile benchmark suite for Hugging Face vision models."""

__version__ = "0.1.0"
