"""Issue 22, item 1 and 3: every page of a report says each fact the same way. Every tab and the offline export of
a matrix of real reports (tests/fixtures/reports: the gallery runs, a model Dynamo captures nothing of, imported
TORCH_TRACE logs of torch 2.11 (GPU) and 2.13 (CPU), a failed run, contended and busy-machine runs) is rendered,
and the counts on the Overview, the tab headers, the export and the API agree with the report's one summary;
stage states are worded as such; headlines quote decided figures only, in numbers formatted for people."""

import html
import re

import pytest

from contract.report import validate_report
from storage.db import session_factory
from tests.browser.conftest import SAMPLE_REPORTS
from tests.support import make_settings, read_sample_report, store_sample_report
from webapp import create_app

IMPORTS = [name for name in SAMPLE_REPORTS if name.startswith("import_")]
TAB_PATHS = {"overview": "", "dynamo": "/dynamo", "aot": "/aot", "inductor": "/inductor", "runtime": "/runtime"}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Every sample report stored once: (client, {name: (slug, the report as validated)})."""
    settings = make_settings(tmp_path_factory.mktemp("agreement"))
    app = create_app(settings)
    runs = {}
    with session_factory(settings.database_url)() as session:
        for name in SAMPLE_REPORTS:
            raw = read_sample_report(name)
            runs[name] = (store_sample_report(session, raw).slug, validate_report(raw))
    return app.test_client(), runs


@pytest.fixture(scope="module")
def pages(site):
    """Every page of every sample: {name: {tab or "export": html}}."""
    client, runs = site
    out = {}
    for name, (slug, _) in runs.items():
        out[name] = {tab: _get(client, f"/r/{slug}{path}") for tab, path in TAB_PATHS.items()}
        out[name]["export"] = _get(client, f"/r/{slug}/export.html")
    return out


def _get(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, f"{url}: {response.status_code}"
    return response.get_data(as_text=True)


def text_of(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def element(page: str, element_id: str) -> str | None:
    """The text of the element with this id (the first, up to its closing tag), or None."""
    match = re.search(rf'<(\w+)[^>]*\bid="{re.escape(element_id)}"[^>]*>(.*?)</\1>', page, re.S)
    return text_of(match.group(2)) if match else None


def cards(page: str) -> dict:
    """The Overview's pipeline: {stage: (state, text)}."""
    return {
        m.group(1): (m.group(2), text_of(m.group(3)))
        for m in re.finditer(r'<li class="pipe-stage" id="pipe-(\w+)" data-state="(\w+)">(.*?)</li>\s*\n', page, re.S)
    }


def headlines(page: str) -> list[str]:
    return [text_of(m.group(1)) for m in re.finditer(r'<li class="headline \w+">(.*?)</li>', page, re.S)]


def panel(export: str, tab: str) -> str:
    """One tab's panel of the offline export."""
    start = export.index(f'<section class="tab-panel" id="tab-{tab}">')
    end = export.find('<section class="tab-panel"', start + 10)
    return export[start : end if end > 0 else len(export)]


def not_reached(tab: str) -> bool:
    """A tab of a stage the run never reached shows none of its counts: the summary's are then the ones to agree."""
    return "This stage recorded nothing" in tab or 'id="not-reached"' in tab


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


@pytest.mark.parametrize("name", SAMPLE_REPORTS)
def test_the_counts_agree_on_every_page_the_export_and_the_api(site, pages, name):
    client, runs = site
    slug, report = runs[name]
    counts = report.summary.counts
    page = pages[name]
    export = page["export"]
    # The tab headers, on the page and in the export, read the one summary (where the run reached the stage).
    for source in (page["dynamo"], panel(export, "dynamo")):
        if not_reached(source):
            continue
        assert element(source, "graph-count") == str(counts.dynamo_graphs)
        assert element(source, "graph-break-count") == (
            f"{_plural(counts.graph_breaks, 'graph break')}, {counts.unique_graph_breaks} unique"
        )
        guards = f", {_plural(counts.guards, 'guard')}" if counts.guards is not None else ""
        assert element(source, "guard-count") == f"{_plural(counts.recompiles, 'recompile')}{guards}"
    for source in (page["aot"], panel(export, "aot")):
        if not_reached(source):
            continue
        assert element(source, "aot-graph-count") == str(counts.aot_graphs)
    for source in (page["inductor"], panel(export, "inductor")):
        if not_reached(source):
            continue
        assert element(source, "kernel-count") == (
            f"{_plural(counts.generated_kernels, 'generated kernel')}, {_plural(counts.library_calls, 'library call')}"
        )
    # The Overview, on the page and in the export, is one story with the same counts.
    for source in (page["overview"], panel(export, "overview")):
        stages = cards(source)
        assert set(stages) == {"dynamo", "aot", "inductor", "runtime"}, name
        dynamo_state, dynamo_text = stages["dynamo"]
        if dynamo_state in ("done", "from_log"):
            if counts.dynamo_graphs:
                assert f"{_plural(counts.dynamo_graphs, 'graph')}" in dynamo_text
            else:
                assert "captured no graph" in dynamo_text
            assert _plural(counts.graph_breaks, "graph break") in dynamo_text
        if stages["inductor"][0] in ("done", "from_log"):
            assert _plural(counts.generated_kernels, "generated kernel") in stages["inductor"][1]
        for text in headlines(source):
            for number, what in re.findall(r"(\d+) (graph break|graph|kernel)s?\b(?! node)", text):
                expected = {
                    "graph": counts.dynamo_graphs,
                    "graph break": counts.graph_breaks,
                    "kernel": counts.generated_kernels,
                }[what]
                if "split your function into" in text or what != "graph":
                    assert int(number) == expected, f"{name}: {text!r} says {number} {what}s, the report {expected}"
    assert cards(page["overview"]) == cards(panel(export, "overview"))
    assert headlines(page["overview"]) == headlines(panel(export, "overview"))
    api = client.get(f"/api/runs/{slug}").get_json()["summary"]
    assert {key: api[key] for key in counts.model_dump()} == counts.model_dump()


def shown_guards(dynamo_page: str) -> str:
    """The guards the Dynamo tab counts: its header's total where torch counted them, else its frames' counts summed;
    "—" where it shows none."""
    total = re.search(r"(\d+) guards?", element(dynamo_page, "guard-count") or "")
    if total:
        return total.group(1)
    frames = re.findall(r'<span class="muted">(\d+) guards?</span></h3>', dynamo_page)
    return str(sum(int(n) for n in frames)) if frames else "—"


def shown_post_grad_graphs(inductor_page: str) -> str:
    section = re.search(
        r'id="inductor-post_grad_graphs">\s*<h2>.*?<span class="count">(\d+)</span>', inductor_page, re.S
    )
    return section.group(1) if section else "0"


def shown_compile_total(runtime_page: str) -> str:
    """The recorded compile's total on the Runtime tab ("took <strong>2.78 s</strong>"), "—" where it gives none."""
    total = re.search(r"took <strong>([^<]+) s</strong>", runtime_page)
    return total.group(1) if total else "—"


@pytest.mark.parametrize("name", SAMPLE_REPORTS)
def test_the_diff_summary_counts_as_the_pages_do(site, pages, name):
    """Every row of the diff's summary, each side, says what that run's own tabs say (compared with the seed)."""
    client, runs = site
    other = "seed" if name != "seed" else "graph_break"
    diff = _get(client, f"/diff/{runs[name][0]}/{runs[other][0]}")
    for side, run in ((0, name), (1, other)):
        counts, page = runs[run][1].summary.counts, pages[run]
        expected = {
            "dynamo_graphs": str(counts.dynamo_graphs),
            "graph_breaks": str(counts.graph_breaks),
            "recompiles": str(counts.recompiles),
            "guards": str(counts.guards) if not_reached(page["dynamo"]) else shown_guards(page["dynamo"]),
            "aot_graphs": str(counts.aot_graphs),
            "post_grad_graphs": shown_post_grad_graphs(page["inductor"]),
            "kernels": str(counts.generated_kernels),
            "compile_seconds_total": shown_compile_total(page["runtime"]),
        }
        rows = dict(re.findall(r'<tr data-metric="(\w+)">(.*?)</tr>', diff, re.S))
        assert set(rows) == set(expected), f"{name}: the diff's summary rows {sorted(rows)}"
        for metric, want in expected.items():
            cells = [text_of(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", rows[metric], re.S)]
            assert cells[1 + side] == want, (
                f"{run} ({'AB'[side]}) {metric}: the diff says {cells[1 + side]}, its pages {want}"
            )


@pytest.mark.parametrize("name", SAMPLE_REPORTS)
def test_a_stage_that_shows_nothing_says_why_in_the_same_words_on_its_card_and_tab(pages, name):
    stages = cards(pages[name]["overview"])
    for tab, empty_id in (("aot", "no-aot-graph"), ("inductor", "no-kernel")):
        state, text = stages[tab]
        shown = element(pages[name][tab], empty_id)
        if state in ("not_run", "nothing_captured", "not_in_log"):
            why = re.search(
                r"((?:not run|nothing to \w+|not in this log): .*?stage|(?:nothing to \w+|not in this log): [^.]*)",
                text,
            )
            assert why, f"{name}/{tab}: the card says no reason: {text!r}"
            if shown is not None:
                assert why.group(1) in shown, f"{name}/{tab}: the card says {why.group(1)!r}, the tab {shown!r}"


def test_a_model_dynamo_captures_nothing_of_is_said_so_everywhere(pages):
    page = pages["lstm_tagger"]
    stages = cards(page["overview"])
    said = " ".join(headlines(page["overview"]))
    assert "split your function" not in said and "Dynamo captured nothing" in said
    assert "Dynamo does not support RNN, GRU, or LSTM" in said
    assert "captured no graph" in stages["dynamo"][1] and "1 graph break" in stages["dynamo"][1]
    for tab in ("aot", "inductor"):
        state, text = stages[tab]
        assert state == "nothing_captured" and "Dynamo captured no graph" in text and "recorded config" not in text
    assert "Dynamo captured no graph" in element(page["inductor"], "no-kernel")
    assert "no Inductor config ran" not in page["inductor"]
    assert "Dynamo captured no graph" in element(page["aot"], "no-aot-graph")
    assert element(page["dynamo"], "graph-count") == "0" and "Dynamo captured no graph" in element(
        page["dynamo"], "no-graph"
    )
    # Every config runs the same eager code: no figure is a winner.
    assert "takes" not in said and "Compiling cannot help here" in said


@pytest.mark.parametrize("name", IMPORTS)
def test_an_imported_log_says_what_the_log_holds_not_what_a_config_stopped(pages, name):
    page = pages[name]["overview"]
    stages = cards(page)
    assert "recorded config" not in page and "stops before this stage" not in page
    assert stages["dynamo"][0] == "from_log" and stages["runtime"][0] == "not_in_log"
    assert "not in a TORCH_TRACE log" in stages["runtime"][1]
    assert "whole job took" not in page, "an imported log holds no job time"
    note = element(page, "pipeline-note") or text_of(re.search(r'pipeline-note">(.*?)</p>', page, re.S).group(1))
    assert "compilation metrics in the log" in note
    for text in headlines(page):
        assert "from 0 graph nodes" not in text


def test_the_torch_2_13_log_of_cpu_kernels_does_not_count_nodes_it_has_not_got(pages):
    said = headlines(pages["import_mlp_train_torch2_13"]["overview"])
    assert "Inductor generated 4 kernels." in said


@pytest.mark.parametrize("name", SAMPLE_REPORTS)
def test_headlines_quote_decided_figures_only_and_numbers_for_people(site, pages, name):
    _, runs = site
    report = runs[name][1]
    undecided = {
        b.config for b in report.runtime.benchmarks if b.config != "eager" and not (b.speedup and b.speedup.decided)
    }
    for text in headlines(pages[name]["overview"]):
        quoted = re.search(r"(\w+) takes [\d.,]+ ms a step against eager's", text)
        assert not (quoted and quoted.group(1) in undecided), f"{name}: an undecided figure headlined: {text!r}"
    for tab, source in pages[name].items():
        visible = text_of(re.sub(r"<(script|style)\b.*?</\1>", " ", source, flags=re.S))
        assert not re.search(r"\d(\.\d+)?e[+-]\d+ ?(ms|s)\b", visible), f"{name}/{tab}: e-notation"


def test_an_outcome_one_way_in_every_round_is_said_so(pages):
    """two_breaks_one_line: backend_eager slower in every round of 14 on a busy machine (0.27-0.32x), so the
    engine decides no figure: the page still says it was slower."""
    said = " ".join(headlines(pages["two_breaks_one_line"]["overview"]))
    assert "Compiling made it slower" in said and "slower than eager with 90% confidence" in said
    assert "not decided" in said  # by how much
    runtime = pages["two_breaks_one_line"]["runtime"]
    assert 'data-outcome="slower_every_round"' in runtime


def test_a_busy_machines_headline_ranks_no_config(pages):
    for name in ("seed_large_contended_cpu", "lstm_tagger"):
        said = " ".join(headlines(pages[name]["overview"]))
        assert "takes" not in said, said
    said = " ".join(headlines(pages["seed_large_contended_cpu"]["overview"]))
    assert "Whether compiling helped is not decided: the machine was busy in every round" in said


def test_two_different_breaks_on_one_line_are_told_apart(pages):
    page = pages["two_breaks_one_line"]
    said = " ".join(headlines(page["overview"]))
    assert "line 7" in said and "2 different breaks" in said
    assert "Unsupported Tensor.item()" in said and "Failed to trace builtin operator" in said
    titles = [
        text_of(m) for m in re.findall(r'<article class="break" id="break-\d+">\s*<h3>(.*?)</h3>', page["dynamo"], re.S)
    ]
    assert len(titles) == 2 and titles[0] != titles[1], titles


def test_compile_ids_are_explained_where_they_first_appear(pages):
    page = pages["graph_break"]["dynamo"]
    assert "0/0 is the first frame" in element(page, "compile-ids")
    tip = re.search(r'<span class="compile-id" title="([^"]+)">1/0</span>', page)
    assert tip and "frame 1" in html.unescape(tip.group(1))


def test_words_that_match_what_ran(pages):
    # An inference job's AOT graph is no forward/backward pair.
    assert "<h2>Inference graphs" in pages["seed"]["aot"] and "Forward and backward graphs" not in pages["seed"]["aot"]
    assert "<h2>Forward and backward graphs" in pages["mlp_train"]["aot"]
    # Recorded with inductor_default, nothing decomposed: not aot_eager's words.
    seed_aot = text_of(pages["seed"]["aot"])
    assert "aot_eager applies no decomposition table" not in seed_aot and "Inductor's decomposition table" in seed_aot
    assert "aot_eager, the recorded config, applies no decomposition table" in text_of(pages["graph_break"]["aot"])
    # Fusion groups count pairs, and say how often they were weighed apart from it.
    summaries = [
        text_of(m)
        for m in re.findall(
            r'<details class="fusion-group [\w_]+"><summary>(.*?)</summary>', pages["mlp_train"]["inductor"], re.S
        )
    ]
    assert summaries and all(re.match(r"^\d+ pairs? (fused|not fused)", s) for s in summaries), summaries
    assert not any(re.match(r"^\d+× ", s) for s in summaries)


def test_a_training_rerun_that_cannot_work_names_the_line_and_says_what_to_do(pages):
    page = pages["seed_train_failed"]["overview"]
    assert "element 0 of tensors does not require grad" in page
    assert "Run it as inference" in element(page, "error-message")
    assert "line 5" in element(page, "error-line") and "def f(x):" in element(page, "error-line")


@pytest.mark.parametrize("name", SAMPLE_REPORTS)
def test_the_roofline_caption_names_the_ceiling_its_shares_are_of(pages, name):
    page = pages[name]["inductor"]
    if 'id="roofline-caption"' not in page:
        return  # no kernel table
    caption = element(page, "roofline-caption")
    table = page[page.index('<table class="records kernels">') : page.index("</table>", page.index("records kernels"))]
    shares = re.findall(r'<span class="roofline[^"]*"[^>]*>([\d.,]+)%', table)
    if shares:
        assert "as a share of" in caption and "no copy bandwidth" not in caption, caption
    else:
        assert "no kernel's share of it is shown" in caption or "as a share of" in caption
    assert not re.search(r">\s*0(\.0+)? [GMk]?B/s", table), "a bandwidth rounded to nothing"


def test_a_cpu_runs_roofline_is_against_the_workers_measured_bandwidth(pages):
    caption = element(pages["seed_busy_cpu"]["inductor"], "roofline-caption")
    assert "this worker's measured copy bandwidth" in caption
