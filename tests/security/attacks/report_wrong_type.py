# Attack: the job writes its own report, with a field of the wrong type (kernels that are numbers), and exits
# before the engine can write the real one. The run must fail cleanly and at once, saying the report is invalid.
import json
import os

with open("report.json", "w") as f:
    json.dump(
        {"status": "ok", "failure": None, "inductor": {"kernels": [1, 2, 3]}, "runtime": {"benchmarks": ["fast"]}}, f
    )
os._exit(0)
