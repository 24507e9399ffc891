"""Torch-free measurement: the statistics of timed rounds, what other processes took of the machine while timing,
torch's compile metrics read into seconds per stage and a timeline, and the kernel caches' hits and misses.

Nothing here imports torch (tests/test_layers.py checks it): the job's child uses these modules, and so do the
trace importer (engine/traceimport.py), the parent side and tests, without paying for torch's import.

    stats.py            median, quantiles, the median's confidence interval, a paired speedup and whether it is decided
    cores.py            which host cores a GPU step's rounds ran on (the thread is never moved)
    load.py             the machine's load: load average, CpuWindow (other processes' cores), contention, the summary
    compile_metrics.py  torch's compilation_metrics -> exclusive seconds per stage; chromium events -> a timeline
    caches.py           kernel binaries in the job's cache folders, trusted ones, hits and misses per cache
"""
