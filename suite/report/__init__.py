"""Host side (pandas, matplotlib), never imported by the child side. In data-flow order:
`load` (raw CSVs -> one typed row per cell, and what was set aside) -> `study` (the cells by
build, GPU, setup, model, batch size, mode) -> `tables/` (one module per table family) and
`plots`, beside the guide's figures (`reference`) -> `publish` (files and the index page)."""
