"""Bring your own job, as its user does it in the browser: upload a TORCH_TRACE archive of two ranks (the site's
real worker imports it), pick a rank; compare two reports; download a report as one file and read it offline."""

import os
import re
import zipfile

from playwright.sync_api import expect

TRACES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "traces-h200-torch2.11")
IMPORT_TIMEOUT_MS = 120_000


def test_importing_two_ranks_gives_a_report_with_a_rank_picker(site, page, tmp_path):
    archive = tmp_path / "trace.zip"
    with zipfile.ZipFile(archive, "w") as z:  # rank 1 compiled something else: it must be flagged
        z.write(os.path.join(TRACES, "mlp_train_bf16.trace.log"), "trace/dedicated_log_torch_trace_rank_0_a.log")
        z.write(os.path.join(TRACES, "graph_break.trace.log"), "trace/dedicated_log_torch_trace_rank_1_b.log")
    page.goto(site.url + "/")
    page.locator("#nav-import").click()
    page.locator("#trace").set_input_files(str(archive))
    page.locator("#import-submit").click()
    expect(page).to_have_url(re.compile(r"/r/[A-Za-z0-9_-]{20,}$"))
    expect(page.locator("#tab-dynamo")).to_be_visible(timeout=IMPORT_TIMEOUT_MS)
    expect(page.locator("#status")).to_have_text("succeeded", timeout=IMPORT_TIMEOUT_MS)
    page.reload()  # the page drew its tabs while the worker stored the reports; the rank facts come with the last
    expect(page.locator("#run-kind")).to_have_text("imported TORCH_TRACE log · rank 0")
    picker = page.locator("#rank-picker a.rank")
    expect(picker).to_have_count(2)
    expect(picker.nth(1)).to_have_class(re.compile(r"\bdiffers\b"))
    expect(page.locator("#ranks-differ")).to_contain_text("rank 1 (graphs, graph_code, graph_breaks, kernels")
    expect(page.locator("#import-malformed")).to_have_text("Every line was read.")
    expect(page.locator("#ranks-differ a.compare-rank")).to_have_attribute("href", re.compile(r"^/diff/[\w-]+/[\w-]+$"))

    page.locator("#tab-aot").click()  # joint, forward and backward graphs from the log's printed code
    graph = page.locator("#graph-aot-1")
    graph.scroll_into_view_if_needed()
    expect(graph).to_have_attribute("data-state", "ready")
    expect(graph.locator(".graph-status")).to_contain_text("nodes")
    expect(page.locator("#aot-functionalization .not-in-log")).to_contain_text("not in a TORCH_TRACE log")

    page.locator("#tab-inductor").click()
    expect(page.locator("#inductor-kernels table.kernels tbody tr")).to_have_count(9)
    page.get_by_role("link", name="triton_poi_fused_gelu_view_0").first.click()
    postgrad = page.locator("#graph-postgrad-0")
    expect(postgrad).to_have_attribute("data-state", "ready")
    expect(postgrad.locator(".graph-highlight")).to_contain_text("Kernel triton_poi_fused_gelu_view_0")

    page.locator("#tab-runtime").click()
    expect(page.locator("#runtime-benchmarks .not-in-log")).to_contain_text("Benchmarks: not in a TORCH_TRACE log")
    expect(page.locator("#runtime-compile .chart")).to_have_count(2)

    picker.nth(1).click()  # rank 1: its own report, the graph breaks of the second log
    expect(page.locator("#run-kind")).to_have_text("imported TORCH_TRACE log · rank 1")
    page.locator("#tab-dynamo").click()
    expect(page.locator("#dynamo-graph_breaks table tbody tr")).to_have_count(2)


def test_compare_with_another_report_side_by_side(site, sample_runs, page):
    page.goto(f"{site.url}/r/{sample_runs['seed']}")
    page.locator("#compare-with").fill(f"{site.url}/r/{sample_runs['graph_break']}/dynamo")
    page.locator("#compare-form button").click()
    expect(page).to_have_url(re.compile(f"/diff/{sample_runs['seed']}/{sample_runs['graph_break']}$"))
    breaks = page.locator('#diff-summary tr[data-metric="graph_breaks"] td')
    expect(breaks.nth(1)).to_have_text("0")
    expect(breaks.nth(3)).to_contain_text("+")
    first = page.locator("#graph-diff-1")
    expect(first.locator("ul.removed")).to_contain_text("torch.sin")
    page.locator("#swap").click()
    expect(page).to_have_url(re.compile(f"/diff/{sample_runs['graph_break']}/{sample_runs['seed']}$"))
    expect(page.locator("#graph-diff-1 ul.added")).to_contain_text("torch.sin")


def test_the_offline_file_works_from_disk_without_any_request(site, sample_runs, page, browser, tmp_path):
    page.goto(f"{site.url}/r/{sample_runs['seed']}")
    with page.expect_download() as download:
        page.locator("#export").click()
    path = tmp_path / "seed.html"
    download.value.save_as(path)
    assert path.stat().st_size < 3 * 1024**2

    context = browser.new_context()
    requests, problems = [], []
    context.on("request", lambda request: requests.append(request.url))
    offline = context.new_page()
    offline.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    offline.on("pageerror", lambda error: problems.append(str(error)))
    offline.goto(path.as_uri())
    expect(offline.locator("#pipe-inductor")).to_contain_text("1 generated kernel")  # the story, as on the page
    graph = offline.locator("#graph-dynamo-0")
    graph.scroll_into_view_if_needed()
    expect(graph).to_have_attribute("data-state", "ready")  # fetched from a data: URL, laid out by a blob: worker
    offline.get_by_role("link", name="cpp_fused_add_cos_mul_sin_tanh_0").first.click()
    postgrad = offline.locator("#graph-postgrad-0")
    expect(postgrad).to_have_attribute("data-state", "ready")
    expect(postgrad.locator(".graph-highlight")).to_contain_text("Kernel cpp_fused_add_cos_mul_sin_tanh_0: 5 nodes")
    offline.locator("#source #L-6 a, #source a[href='#L-6']").first.click()
    expect(offline.locator("#line-provenance")).to_contain_text("Dynamo nodes (5)")  # provenance from a data: URL
    chart = offline.locator("#runtime-benchmarks .chart")
    chart.scroll_into_view_if_needed()
    expect(chart.locator(".main-svg").first).to_be_attached()  # Plotly, inline
    context.close()
    assert [url for url in requests if not url.startswith(("file:", "data:", "blob:"))] == []
    assert problems == []
