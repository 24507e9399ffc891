"""The Runtime tab and the overview say what the ladder's figures mean: the correctness verdict in words at the top,
"not decided" instead of a bare speedup when the rounds' spread does not decide it, the machine's load, host
overhead, and each rung's CUDA-graph status beside its bar (real reports: tests/fixtures/reports/README.md)."""

import json
import os

from markupsafe import escape

from contract.report import validate_report
from storage.config import PROJECT_ROOT
from tests.web.test_web_pages import _store
from webapp.tabs import inductor as inductor_view
from webapp.tabs import runtime as runtime_view


def _report(name: str) -> dict:
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", f"{name}.json")) as f:
        return json.load(f)


def _pages(client, db, name):
    run = _store(client, db, _report(name))
    return {
        tab: client.get(f"/r/{run.slug}" + ("" if tab == "overview" else f"/{tab}")).get_data(as_text=True)
        for tab in ("overview", "runtime")
    }


def test_a_busy_cpu_run_says_not_decided_and_why(client, db):
    report = _report("seed_busy_cpu")
    html = _pages(client, db, "seed_busy_cpu")
    runtime = html["runtime"]
    verdict = runtime[runtime.index('id="runtime-verdict"') : runtime.index('id="runtime-benchmarks"')]
    assert "Every compiled config matches plain eager within tolerance" in verdict
    assert "the machine was busy while timing" in verdict and "Timed as inference" in verdict
    # Both Inductor configs were faster in each of the 5 rounds (2.30-7.53x, 1.91-7.52x): said so, without a figure.
    assert "Speedup not decided for backend_eager, aot_eager:" in verdict
    assert "inductor_default: faster than eager in every round (2.3-7.53x over 5 rounds)" in verdict
    table = runtime[runtime.index('class="records benchmarks"') :]
    for b in report["runtime"]["benchmarks"][1:3]:
        assert b["speedup"]["text"] in table and f"{b['speedup_vs_eager']:.2f}×" not in table
    assert "faster than eager in every round (1.91-7.52x over 5 rounds); by how much is not decided" in table
    assert "is host overhead" in runtime
    overview = html["overview"]
    assert (
        "Compiling helped: inductor_default was faster than eager in every round (2.3-7.53x over 5 rounds)" in overview
    )
    assert "by how much is not decided" in overview
    assert "Every compiled config matches plain eager within tolerance" in overview


def test_a_run_timed_beside_busy_processes_says_so_and_counts_the_steps_page_faults(client, db):
    """A real job of the 64 MB seed beside one busy loop: every round contended, and each step faults its
    intermediates in (each past glibc's largest mmap threshold)."""
    html = _pages(client, db, "seed_large_contended_cpu")
    runtime = html["runtime"]
    verdict = runtime[runtime.index('id="runtime-verdict"') : runtime.index('id="runtime-benchmarks"')]
    assert "other processes used 1.00 cores while timing" in verdict and "busy in every round" in verdict
    assert "Speedup not decided for backend_eager: other processes took the cores the step needs" in verdict
    assert "measurements too noisy" not in verdict
    table = runtime[runtime.index('class="records benchmarks"') :]
    assert "not decided: the machine was busy, other processes used 1.00 of its 2 cores" in table
    assert "eager: 81,925 page faults per step" in table and "backend_eager: 81,925 page faults per step" in table
    assert "page faults per step" not in _pages(client, db, "seed_busy_cpu")["runtime"]  # none recorded there


def test_a_decided_gpu_speedup_is_quoted_with_its_spread_and_cuda_graphs_beside_its_bar(client, db):
    html = _pages(client, db, "seed_large_gpu")["runtime"]
    assert "4.07x faster (4.06-4.08)" in html
    chart = runtime_view.ladder_chart(validate_report(_report("seed_large_gpu")).runtime.benchmarks)
    labels = dict(zip(chart["data"][0]["x"], chart["data"][0]["text"]))
    assert labels["inductor_default"] == "4.07x" and labels["inductor_reduce_overhead"].endswith("CUDA graphs used")
    note = html[html.index('id="cudagraphs-inductor_reduce_overhead"') :]
    assert note.index("the compiled graphs were recorded and replayed as CUDA graphs") < note.index("</p>")
    assert "CUDA graphs used" in html[html.index('data-config="inductor_reduce_overhead"') :]  # in its row too


def test_an_old_report_without_spreads_never_shows_a_bare_speedup(client, db):
    overview = _pages(client, db, "seed")["overview"]
    story = overview[overview.index('id="story"') : overview.index('id="overview-details"')]
    # Its one median decides nothing: the story ranks no config and quotes no figure (the Runtime tab has it).
    assert "Whether compiling helped is not decided" in story and "no speedup decided" in story
    assert "3.79" not in story and "Compiling helped" not in story
    runtime = _pages(client, db, "seed")["runtime"]
    assert "not decided: no spread recorded (3.79x from one median)" in runtime


def test_the_cpu_kernel_table_has_bytes_and_a_roofline_share_against_the_workers_measured_bandwidth():
    report = validate_report(_report("seed_busy_cpu"))
    [row] = inductor_view.kernel_rows(report.inductor, report.runtime, report.environment.device_name)
    assert row["bytes_accessed"] == 2 * 1024 * 1024 * 4  # one float32 1024x1024 input and output, once each
    measured = report.runtime.memory_bandwidth.bytes_per_s
    assert row["roofline_share"] == row["bandwidth"] / measured


def test_the_figures_come_from_fresh_processes_and_the_jobs_own_process_is_labelled(client, db):
    """A v3 report (issue 18): each rung's time per step across the two fresh measuring processes comes first, the
    capture process's own figure and speedup under it, labelled; the method and each process's speedups are said;
    and the verdict gives the processes' reason for an undecided speedup."""
    report = _report("seed_processes_busy_cpu")
    runtime = _pages(client, db, "seed_processes_busy_cpu")["runtime"]
    table = runtime[
        runtime.index('class="records benchmarks"') : runtime.index(
            "</table>", runtime.index('class="records benchmarks"')
        )
    ]
    bench = {b["config"]: b for b in report["runtime"]["benchmarks"]}
    inductor = bench["inductor_default"]
    p = inductor["processes"]
    row = table[table.index('data-config="inductor_default"') :]
    row = row[: row.index("</tr>")]
    assert (
        f"{runtime_view.ms(p['median_ms'])} ({runtime_view.figure(p['low_ms'])}-{runtime_view.ms(p['high_ms'])} over 2 fresh processes)"
        in row
    )
    assert "this job's process: " + runtime_view.ms(inductor["median_ms"]) in row
    assert inductor["speedup"]["source"] == "processes" and not inductor["speedup"]["decided"]
    low, high = inductor["speedup"]["low"], inductor["speedup"]["high"]
    assert low > 1  # each process's interval lies above 1: faster in each, by how much not decided
    spread = f"{runtime_view.figure(low)}-{runtime_view.times(high)}"
    assert f"faster than eager in each of 2 fresh processes ({spread}); by how much is not decided" in row
    assert "this job's process: " + inductor["capture_speedup"]["text"] in row
    note = runtime[runtime.index('id="processes-method"') :]
    assert note.startswith('id="processes-method">Figures across 2 fresh processes: the ladder&#39;s interleaved')
    for run in report["runtime"]["processes"]["runs"]:
        assert f"{run['label']} aot_eager {round(run['speedups']['aot_eager'], 2)}x" in note
    verdict = runtime[runtime.index('id="runtime-verdict"') : runtime.index('id="runtime-benchmarks"')]
    assert "Speedup not decided for aot_eager: other processes took the cores" in verdict
    assert "inductor_default: faster than eager in each of 2 fresh processes" in verdict


def test_each_figure_across_processes_says_in_words_how_far_it_holds(client, db):
    """Issue 18 item 3: where a figure is not the next process's (noisy, host-bound), the report says why, under the
    figure. A real CPU job whose two processes' medians sit 6-8% apart."""
    report = _report("seed_processes_cpu")
    runtime = _pages(client, db, "seed_processes_cpu")["runtime"]
    for b in report["runtime"]["benchmarks"]:
        reading = b["processes"]["reading"]
        assert reading.startswith("noisy: the 2 processes' medians are ")
        row = runtime[runtime.index(f'data-config="{b["config"]}"') :]
        row = row[: row.index("</tr>")]
        assert f'<span class="muted processes-reading">{escape(reading)}</span>' in row
    assert "Host cores:" not in runtime  # a CPU step's threads are never moved


def test_a_gpu_reports_lede_names_the_host_cores_its_rounds_visited(client, db):
    """A real H200 report: a GPU step's rounds visit the host's cores in turn (engine/measure/cores.py), and the
    Speedup ladder's lede says so, in the report's own words."""
    report = _report("seed_gpu_host_cores")
    cores = report["runtime"]["timing"]["host_cores"]
    assert cores.startswith("each round on the next of this process's 16 host cores")
    runtime = _pages(client, db, "seed_gpu_host_cores")["runtime"]
    lede = runtime[runtime.index('id="runtime-benchmarks"') :]
    lede = lede[: lede.index("</p>")]
    assert f"Host cores: {escape(cores)}." in lede
