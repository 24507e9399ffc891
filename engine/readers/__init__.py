"""Torch-free readers of what torch writes: structured-trace records (tracelog), printed FX graph code (fxtext),
graph nodes as data (nodes), Dynamo's records (dynamo_log) and Inductor's (inductor_log).

The child's stage collectors (engine/stages) read their own log tap with these, and the trace importer
(engine/traceimport.py) reads an uploaded TORCH_TRACE log with the same functions, so a pasted run and an imported
log read the same. Import rule (tests/test_layers.py): nothing here imports torch, even lazily; the importer, which
runs in a child of its own on untrusted data, never pays for torch's import.
"""
