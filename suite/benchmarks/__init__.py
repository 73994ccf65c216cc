"""The suite's benchmarks of itself (not tests; nox sessions run them and they print figures):
`history_scale` times the history on a generated year of nights; `synth` generates those nights
(also the history tests' known answers). Host side only.
"""
