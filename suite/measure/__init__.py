"""The child side: what runs inside one cell's worker process (torch imported lazily, inside
functions): the worker entry point, the timing loop, the scenarios, models, inputs, accuracy,
dynamo's counters, statistics, provenance, and the test-only fault hooks.

Runs inside the containers: only what they pin (torch, transformers, pillow, pyyaml, requests),
under torch 2.0.1 + transformers 4.31 on Python 3.10 as well as under current releases.
"""
