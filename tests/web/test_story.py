"""The Overview's story from a report's sections: today's fields, and the newer fields
(summary.counts, speedup with its decision, correctness verdicts and first divergent stage, host overhead,
recompile details) used when present."""

import json
import os

from contract.report import validate_report
from storage.config import PROJECT_ROOT
from webapp.tabs import overview as story

FINISHED = [
    {"stage": s, "state": "finished", "seconds": 1.0}
    for s in ("load", "eager", "dynamo", "aot", "inductor", "report", "benchmark", "profile")
]


def _report(name):
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", f"{name}.json")) as f:
        return json.load(f)


def _story(sections, progress=FINISHED, status="succeeded", failure=None):
    """The Overview of a report's sections (a stored report's dict, validated as storage validates it)."""
    report = validate_report(sections)
    models = {name: getattr(report, name) for name in sections if name != "schema_version"}
    counts = report.summary.counts
    facts = story.Facts(
        counts=counts,
        states=story.stage_states(progress, status, failure, counts=counts),
        recorded_config=report.runtime.recorded_config,
    )
    return story.story(models, facts=facts, progress=progress, failure=failure, filename="model.py")


def test_old_reports_tell_it_from_what_they_recorded():
    tale = _story(_report("recompile"))
    texts = [h["text"] for h in tale["headlines"]]
    assert (
        "Dynamo compiled again 1 time: failed a guard (tensor 'x' size mismatch at index 0. expected 4, actual 6)."
        in texts
    )
    dynamo = tale["stages"][0]
    assert dynamo["facts"] == ["2 graphs, 9 nodes", "0 graph breaks", "1 recompile"] and dynamo["state"] == "done"


def test_the_fields_added_later_are_used_when_present():
    sections = _report("seed")
    sections["summary"] = {
        "counts": {
            "dynamo_graphs": 1,
            "graph_breaks": 0,
            "unique_graph_breaks": 0,
            "recompiles": 0,
            "guards": None,
            "aot_graphs": 1,
            "generated_kernels": 7,
            "library_calls": 2,
        }
    }
    eager, compiled = sections["runtime"]["benchmarks"]
    compiled["speedup"] = {
        "value": 3.8,
        "low": 3.7,
        "high": 3.9,
        "decided": True,
        "verdict": "faster",
        "text": "3.80x faster (3.70-3.90)",
    }
    compiled["correctness"] = {"verdict": "mismatch"}
    sections["runtime"]["correctness"] = {
        "first_divergent_stage": "inductor",
        "text": "eager and aot_eager agree; inductor_default differs",
    }
    sections["runtime"]["kernel_profile_summary"] = {"host_overhead_share": 0.7}
    sections["runtime"]["mode"] = {"kind": "inference"}
    tale = _story(sections)
    first, second = tale["headlines"][:2]
    assert (
        first["text"]
        == ("The outputs stop matching eager at TorchInductor: eager and aot_eager agree; inductor_default differs")
        and first["kind"] == "bad"
    )
    assert "Dynamo captured your whole function" in second["text"]
    speedup = next(h for h in tale["headlines"] if "Compiling helped" in h["text"])
    assert speedup["text"].endswith("13.9 ms: 3.80x faster (3.70-3.90); outputs differ from eager.")
    inductor, runtime = tale["stages"][2], tale["stages"][3]
    assert inductor["facts"][0] == "7 generated kernels" and "2 library calls" in inductor["facts"]
    assert "host-bound: 70% of the step is host overhead" in runtime["facts"]
    assert tale["stages"][1]["facts"][0] == "inference graphs"


def test_an_undecided_speedup_is_not_called_a_win():
    sections = _report("seed")
    sections["runtime"]["benchmarks"][1]["speedup"] = {
        "value": 1.05,
        "decided": False,
        "verdict": None,
        "text": "not decided: measurements too noisy (0.8-2.1x)",
    }
    said = [h for h in _story(sections)["headlines"] if h["anchor"] == "runtime-benchmarks"]
    assert [h["kind"] for h in said] == ["warn"]
    assert said[0]["text"].startswith("Whether compiling helped is not decided: no config's speedup is decided")
    assert "takes" not in said[0]["text"] and "1.05" not in said[0]["text"]  # no figure quoted, none ranked


def test_while_running_the_stages_to_come_are_pending_and_tabs_open_after_their_stage():
    progress = [{"stage": "load", "state": "finished"}, {"stage": "dynamo", "state": "started"}]
    states = story.stage_states(progress, "running", None)
    assert states == {"dynamo": "running", "aot": "pending", "inductor": "pending", "runtime": "pending"}
    assert story.tabs_ready(progress, "running", None, stored=True) == set()
    progress += [{"stage": "report", "state": "finished"}]
    assert story.tabs_ready(progress, "running", None, stored=True) == {"dynamo", "aot", "inductor"}
