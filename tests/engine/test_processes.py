"""Timing across processes: a speedup is decided only when the fresh measuring processes agree
(engine.measure.stats.speedup_across_processes), and the figures they give the report (process_figures.merge_processes)."""

from engine.measure.process_figures import merge_processes, reading
from engine.measure.stats import speedup_across_processes

# Rounds shaped as a seed job's on this machine (ms per step of 14 rounds, eager and inductor_default paired): two
# processes that are each tight but sit 3.37x and 2.76x apart, the fresh-clone CI's two disagreeing jobs.
EAGER_A = [3.37, 3.41, 3.35, 3.39, 3.36, 3.44, 3.38, 3.40, 3.33, 3.37, 3.42, 3.36, 3.38, 3.39]
INDUCTOR_A = [1.00, 1.01, 0.99, 1.00, 1.00, 1.02, 1.00, 1.01, 0.99, 1.00, 1.01, 1.00, 1.00, 1.00]
EAGER_B = [2.76, 2.80, 2.74, 2.77, 2.79, 2.75, 2.78, 2.76, 2.81, 2.75, 2.77, 2.78, 2.74, 2.76]
INDUCTOR_B = [1.00, 1.01, 1.00, 0.99, 1.01, 1.00, 1.00, 1.00, 1.02, 0.99, 1.00, 1.01, 1.00, 1.00]


def test_a_speedup_is_undecided_when_the_processes_disagree():
    each = [speedup_across_processes([e], [r]) for e, r in ((EAGER_A, INDUCTOR_A), (EAGER_B, INDUCTOR_B))]
    assert [round(s["value"], 2) for s in each] == [3.37, 2.76] and all(s["value"] for s in each)
    both = speedup_across_processes([EAGER_A, EAGER_B], [INDUCTOR_A, INDUCTOR_B])
    assert not both["decided"] and both["verdict"] is None
    assert both["text"].startswith("not decided: the 2 processes disagree (3.37x, 2.76x)")
    assert both["low"] <= 2.76 and both["high"] >= 3.37  # the interval holds every process's own
    assert both["source"] == "processes" and [round(v, 2) for v in both["processes"]] == [3.37, 2.76]


def test_a_speedup_is_decided_when_the_processes_agree_and_undecided_from_one_process():
    eager_c = [e * 1.03 for e in EAGER_A]  # a second process 3% slower in eager: 3.47x against 3.37x
    agreed = speedup_across_processes([EAGER_A, eager_c], [INDUCTOR_A, INDUCTOR_A])
    assert agreed["decided"] and agreed["verdict"] == "faster"
    assert agreed["low"] <= min(agreed["processes"]) <= max(agreed["processes"]) <= agreed["high"]
    assert "2 fresh processes: 3.37x, 3.48x" in agreed["text"]
    alone = speedup_across_processes([EAGER_A], [INDUCTOR_A])
    assert not alone["decided"] and "only one fresh process" in alone["text"]


def test_the_runtime_figures_come_from_the_processes_and_the_capture_process_stays_labelled():
    capture = {
        "value": 3.1,
        "low": 3.0,
        "high": 3.2,
        "decided": True,
        "verdict": "faster",
        "text": "3.10x faster",
        "source": "capture_process",
    }
    rt = {
        "benchmarks": [
            {"config": "eager", "status": "ok", "speedup": {"value": 1.0}},
            {"config": "inductor_default", "status": "ok", "speedup": capture},
        ]
    }
    load = {"text": "quiet", "contended": False}
    results = {
        label: {
            "status": "ok",
            "wall_seconds": 5.0,
            "timing": {"rounds_ms": {"eager": e, "inductor_default": r}, "load": load, "errors": []},
        }
        for label, e, r in (("warmup", EAGER_A, INDUCTOR_A), ("warm", EAGER_B, INDUCTOR_B))
    }
    merge_processes(rt, results)
    assert rt["processes"]["status"] == "ok" and [r["label"] for r in rt["processes"]["runs"]] == ["warmup", "warm"]
    assert round(rt["processes"]["runs"][0]["speedups"]["inductor_default"], 2) == 3.37
    eager, inductor = rt["benchmarks"]
    assert eager["processes"]["process_medians_ms"] == [3.38, 2.765]
    assert eager["processes"]["reading"] == "noisy: the 2 processes' medians are 20% apart"  # a CPU step: no GPU
    assert inductor["capture_speedup"] == capture  # kept, labelled as the capture process's
    assert inductor["speedup"]["source"] == "processes" and not inductor["speedup"]["decided"]
    assert inductor["speedup_vs_eager"] == inductor["speedup"]["value"]


def test_a_process_whose_every_round_was_contended_decides_nothing():
    """A measuring process that found the machine busy in every round (its load says contended, as the ladder's
    time_rounds records it) makes the speedup undecided with that reason, however well its rounds agree."""
    rt = {
        "benchmarks": [
            {"config": "eager", "status": "ok", "speedup": {"value": 1.0}},
            {"config": "inductor_default", "status": "ok", "speedup": {"value": 3.4, "decided": True}},
        ]
    }
    results = {
        label: {
            "status": "ok",
            "timing": {
                "rounds_ms": {"eager": EAGER_A, "inductor_default": INDUCTOR_A},
                "load": {"text": "busy", "contended": label == "warm"},
                "errors": [],
            },
        }
        for label in ("warmup", "warm")
    }
    merge_processes(rt, results)
    assert [r["contended"] for r in rt["processes"]["runs"]] == [False, True]
    speedup = rt["benchmarks"][1]["speedup"]
    assert not speedup["decided"] and "the machine was busy in every round of the warm process" in speedup["text"]


def test_a_figure_says_in_words_whether_it_holds_in_the_next_process():
    """The H200's 1024² seed compiled (docs/benchmarks.md), the GPU busy 0.0047 ms of a
    0.035 ms step: noisy (11%) and host-bound. The 4096² seed's eager: 0.5% apart, busy 96%: it holds."""
    seed = reading([0.0330, 0.0370], 0.035, 0.0047)
    assert seed.startswith("noisy: the 2 processes' medians are 11% apart; host-bound: the GPU is busy for 13%")
    large = reading([0.2044, 0.2055], 0.2049, 0.1968)
    assert large == "the 2 processes agree within 1%; GPU-bound: the GPU is busy for 96% of the step"
