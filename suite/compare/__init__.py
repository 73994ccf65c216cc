"""Regressions between two runs (`python -m suite compare`): `rule` judges each cell, `markdown`
writes the report. Host side only."""
