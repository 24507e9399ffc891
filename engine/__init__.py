"""pt2scope engine: run torch.compile on a user's model and record every stage into one versioned report.

Dependency rule: this package imports torch and small pure-Python helpers, never Flask, Celery or SQL.
The parent side (``engine.job``, ``engine.sandbox``, ``engine.cli``, ``engine.reportfile``) does not even import
torch: user code and torch run only in the sandboxed child process started by ``engine.job.run_job`` (entry
point ``engine.child``).

Where each stage is captured:
    engine/stages/dynamo.py     TorchDynamo: FX graphs, guards, graph breaks, recompiles, bytecode
    engine/stages/aot.py        AOTAutograd: joint/forward/backward graphs, saved values, functionalization,
                                decompositions
    engine/stages/inductor.py   TorchInductor: post-grad graphs, IR, fusion decisions, kernels, output code
    engine/stages/runtime/      compile times, timeline, the backend/mode benchmark ladder, profiler, CUDA graphs,
                                the warm compile (one module per concern: its __init__ lists them)
    engine/measure/             torch-free measurement: statistics, machine load, compile metrics, cache counts
    engine/readers/             torch-free readers of torch's records (trace events, graph code, output code), shared
                                by the stages and the trace importer (engine/traceimport.py)
    engine/warm.py              a warm compile in a fresh process (cold vs warm, runtime.compile_cache)
    engine/logtap.py            the log tap and the registry of its readers (what each stage reads from torch's logs)
"""
