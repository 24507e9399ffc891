"""Checks on reports that tests of several layers share (plain data: no torch, no storage)."""

from __future__ import annotations

# What the measuring processes (runtime.processes) add to each benchmark after the report was first handed over.
PROCESS_FIGURES = ("speedup", "speedup_vs_eager", "processes", "capture_speedup")


def assert_final_benchmarks_add_only_the_processes(early: list[dict], final: list[dict]) -> None:
    """The final report's benchmarks are the early report's, plus the figures across the fresh measuring
    processes; the speedup the early report showed is kept as the capture process's own."""
    assert [b["config"] for b in early] == [b["config"] for b in final]
    for before, after in zip(early, final):
        assert {k: v for k, v in before.items() if k not in PROCESS_FIGURES} == {
            k: v for k, v in after.items() if k not in PROCESS_FIGURES
        }
        assert before["processes"] is None and before["capture_speedup"] is None
        if after["config"] != "eager" and after["processes"] is not None:
            assert after["capture_speedup"] == before["speedup"]
            assert after["speedup"]["source"] == "processes"
