"""Host side (pandas, matplotlib): raw CSVs into the study model, the guide's tables, plots,
its published figures beside ours, and the index page. Never imported by the child side."""
