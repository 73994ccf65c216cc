"""What the suite does on GitHub by itself: `issues` opens and updates one issue per regressed
cell through `gh` (`history verdict --issues`, `history confirm --issues`). Host side only; it
reads the history's judgements (suite.history) and is called by the CLI.
"""
