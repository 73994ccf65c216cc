"""The row's sections: each topic's columns defined once, in its own module here (key and
settings, how the cell ended, latency, throughput, compiling, accuracy, memory, provenance and the
machine, health, sampling, schedule, compile phases, CUDA graphs, energy, device time, pair, and
one per scenario), each module's `SECTION` built from `base.Column` and `base.Section`. Which
sections a row has, in which order, and the CSV's column order: suite.results.layout. Imported
inside the containers: standard library only.
"""
