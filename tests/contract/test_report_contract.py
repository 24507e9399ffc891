"""The typed report (contract/report.py): real engine reports validate, malformed ones are rejected naming the
field, versions are checked, v1 reports are upgraded, and the generated schema, docs and JS are current."""

import copy
import json
import os
import re
import subprocess

import pytest

from contract import docs
from contract.report import (
    SCHEMA_VERSION,
    InvalidReport,
    Report,
    ReportError,
    ReportVersionError,
    checked_report,
    validate_report,
)
from engine.reportfile import empty_report, failed_report, read_report
from tests.support import read_sample_report

ROOT = docs.ROOT
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "reports")
FIXTURE_NAMES = sorted(
    re.sub(r"\.json(\.gz)?$", "", n) for n in os.listdir(FIXTURES) if re.search(r"\.json(\.gz)?$", n)
)


def fixture(name: str) -> dict:
    return read_sample_report(name)


def missing_keys(value, schema: dict, defs: dict, path: str = "") -> list[str]:
    """Paths of the schema's object keys absent from ``value`` (every key must be present after validation)."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in schema:
        # A union (e.g. marks): the value must carry every key of the member it matched; try each.
        options = [
            missing_keys(value, option, defs, path)
            for option in schema["anyOf"]
            if option.get("type") != "null" and value is not None
        ]
        return min(options, key=len) if options else []
    out = []
    if isinstance(value, dict) and "properties" in schema:
        for key, prop in schema["properties"].items():
            if key not in value:
                out.append(f"{path}.{key}")
            else:
                out += missing_keys(value[key], prop, defs, f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value[:3]):
            out += missing_keys(item, schema["items"], defs, f"{path}[{i}]")
    return out


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_fixture_report_validates_and_comes_back_with_every_key(name):
    raw = fixture(name)
    report = checked_report(raw)
    assert report["schema_version"] == SCHEMA_VERSION
    schema = docs.json_schema()
    assert missing_keys(report, schema, schema["$defs"]) == []
    # Nothing recorded is lost or changed: the graphs and benchmarks are the fixture's own.
    assert [[n["name"] for n in g["nodes"]] for g in report["dynamo"]["graphs"]] == [
        [n["name"] for n in g["nodes"]] for g in raw["dynamo"]["graphs"]
    ]
    assert [b["median_ms"] for b in report["runtime"]["benchmarks"]] == [
        b["median_ms"] for b in raw["runtime"]["benchmarks"]
    ]
    assert checked_report(report) == report  # validating a validated report changes nothing


def test_v1_reports_are_upgraded_on_read():
    raw = fixture("seed")  # a v1 report: an early engine wrote no sandbox limits, and no isolation section
    assert raw["schema_version"] == 1 and "cpu_time_limit_s" not in raw["request"] and "isolation" not in raw
    report = checked_report(raw)
    assert report["schema_version"] == SCHEMA_VERSION == 4
    assert (
        report["request"]["cpu_time_limit_s"] is None
        and report["request"]["time_limit_s"] == raw["request"]["time_limit_s"]
    )
    assert report["isolation"]["mode"] is None and report["isolation"]["limits"]["process_limit"] is None
    # Not training: v1 left the gradient errors out, v2 has them null.
    assert all("grad_max_abs_error" not in b for b in raw["runtime"]["benchmarks"])
    assert all(b["grad_max_abs_error"] is None for b in report["runtime"]["benchmarks"])
    assert raw["schema_version"] == 1  # the caller's report is not modified


def test_v2_speedups_are_read_as_the_capture_process_own():
    """v2 -> v3: a v2 report timed its speedups in the job's own process only (no measuring processes)."""
    raw = fixture("seed_large_contended_cpu")
    assert raw["schema_version"] == 2
    report = checked_report(raw)
    assert report["schema_version"] == SCHEMA_VERSION and report["runtime"]["processes"]["status"] is None
    speedups = [b["speedup"] for b in report["runtime"]["benchmarks"] if b["speedup"] is not None]
    assert speedups and all(s["source"] == "capture_process" and s["processes"] == [] for s in speedups)
    assert all(b["processes"] is None and b["capture_speedup"] is None for b in report["runtime"]["benchmarks"])


def test_v3_prestart_fields_are_renamed_on_read():
    """v3 -> v4: what a prestarted child did before its job was called ``ahead``; v4 calls it ``prestart``."""
    raw = fixture("seed_processes_cpu")
    assert raw["schema_version"] == 3
    raw["timeline"] = {
        "prestarted": True,
        "phases": [
            {"phase": "import_torch", "side": "child", "start_s": 0.0, "end_s": 2.0, "ahead": True},
            {"phase": "load_user_code", "side": "child", "start_s": 2.5, "end_s": 3.0, "ahead": False},
        ],
    }
    raw["runtime"]["memory_bandwidth"]["measured_ahead"] = True
    report = checked_report(raw)
    assert report["schema_version"] == SCHEMA_VERSION == 4
    assert [(p["phase"], p["prestart"]) for p in report["timeline"]["phases"]] == [
        ("import_torch", True),
        ("load_user_code", False),
    ]
    assert report["runtime"]["memory_bandwidth"]["measured_in_prestart"] is True
    assert "ahead" not in json.dumps(report["timeline"]) and raw["timeline"]["phases"][0]["ahead"] is True


def test_a_v2_report_may_not_leave_out_what_v1_could():
    report = checked_report(fixture("seed"))
    del report["request"]["cpu_time_limit_s"]
    with pytest.raises(InvalidReport, match=r"^request\.cpu_time_limit_s: Field required"):
        validate_report(report)


@pytest.mark.parametrize(
    "spoil, path, why",
    [
        (
            lambda r: r["runtime"]["benchmarks"][1].update(median_ms="fast"),
            "runtime.benchmarks[1].median_ms",
            "Input should be a valid number",
        ),
        (
            lambda r: r["dynamo"]["graphs"][0]["nodes"][2].update(colour="red"),
            "dynamo.graphs[0].nodes[2].colour",
            "Extra inputs are not permitted",
        ),
        (
            lambda r: r["aot"]["graphs"][0]["nodes"][3]["marks"].update(saved="yes"),
            "aot.graphs[0].nodes[3].marks.saved",
            "Input should be a valid boolean",
        ),
        (
            lambda r: r["runtime"]["benchmarks"][0].update(config="turbo"),
            "runtime.benchmarks[0].config",
            "Input should be 'eager', 'backend_eager'",
        ),
        (lambda r: r.pop("request"), "request", "Field required"),
        (lambda r: r.update(extra_section={}), "extra_section", "Extra inputs are not permitted"),
    ],
)
def test_a_malformed_report_is_rejected_naming_the_field(spoil, path, why):
    report = copy.deepcopy(fixture("mlp_train"))
    spoil(report)
    with pytest.raises(InvalidReport) as caught:
        validate_report(report)
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: {why}")


@pytest.mark.parametrize(
    "version, message",
    [
        (
            5,
            "report schema_version 5 is not one this pt2scope reads (1, 2, 3, 4): it was written by a newer pt2scope; "
            "upgrade this one to read it",
        ),
        (0, "report schema_version 0 is not one this pt2scope reads (1, 2, 3, 4)"),
        ("2", "report schema_version '2' is not one this pt2scope reads (1, 2, 3, 4)"),
        (None, "the report has no schema_version: not a pt2scope report"),
    ],
)
def test_an_unknown_version_is_refused_with_a_clear_message(version, message):
    report = fixture("seed")
    report["schema_version"] = version
    with pytest.raises(ReportVersionError) as caught:
        validate_report(report)
    assert str(caught.value) == message


def test_a_report_that_is_not_an_object_is_refused():
    with pytest.raises(ReportError, match="a report is a JSON object, not list"):
        validate_report([])


REQUEST = {
    "code": "x = 1\n",
    "filename": "m.py",
    "device": "cpu",
    "train": None,
    "configs": ["eager"],
    "time_limit_s": 900.0,
    "memory_limit_mb": 8192,
    "cpu_time_limit_s": 1800.0,
    "process_limit": 512,
    "open_files_limit": 1024,
    "file_size_limit_mb": 256,
    "output_limit_mb": 1024,
}


def test_empty_and_failed_reports_have_every_documented_key_and_validate():
    schema = docs.json_schema()
    empty = empty_report(REQUEST)
    assert missing_keys(empty, schema, schema["$defs"]) == []
    assert empty["status"] == "running" and empty["source"] == {
        "filename": "m.py",
        "code": "x = 1\n",
        "path": None,
        "not_in_log": False,
    }
    failed = failed_report(REQUEST, "load", "syntax_error", "SyntaxError: invalid syntax (m.py:1)", file="m.py", line=1)
    assert checked_report(failed) == failed
    assert failed["failure"]["kind"] == "syntax_error" and failed["errors"][0]["stage"] == "load"


def test_a_failure_kind_outside_the_vocabulary_is_a_bug_caught_when_building_it():
    with pytest.raises(ValueError, match="kind"):
        failed_report(REQUEST, "load", "oops", "message")


def test_the_generated_schema_docs_and_javascript_are_current():
    assert docs.stale() == [], "run `python -m contract.docs`"
    out = subprocess.run(
        [os.path.join(ROOT, ".venv", "bin", "python"), "-m", "contract.docs", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr


def test_the_json_schema_is_the_models():
    with open(os.path.join(ROOT, docs.SCHEMA_PATH)) as f:
        assert json.load(f) == json.loads(json.dumps(docs.json_schema()))
    assert set(docs.json_schema()["properties"]) == set(Report.model_fields)


def test_reading_a_report_file_checks_and_upgrades_it(tmp_path):
    assert read_report(os.path.join(FIXTURES, "seed.json"))["schema_version"] == SCHEMA_VERSION
    newer = tmp_path / "report.json"
    newer.write_text(json.dumps({**fixture("seed"), "schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(ReportVersionError, match="written by a newer pt2scope"):
        read_report(str(newer))
