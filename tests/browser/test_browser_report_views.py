"""The report views on real sample reports (tests/fixtures/reports), as a reader uses them: graphs drawn and
clicked, links that open on a node, kernel or line, cross-highlighting, stage marks, charts, and the Dynamo views.
Each test reads one or two pages of the shared site; none runs the engine."""

import re

from playwright.sync_api import expect

SEED_KERNEL = "cpp_fused_add_cos_mul_sin_tanh_0"


def report_url(site, sample_runs, name, tab=""):
    return f"{site.url}/r/{sample_runs[name]}" + (f"/{tab}" if tab else "")


def test_clicking_the_seed_kernel_highlights_its_nodes_and_line(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "seed", "inductor"))
    rows = page.locator("#inductor-kernels table.kernels tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("4.11 ms")  # measured time, joined from the runtime's profile
    expect(rows.first).to_contain_text("100%")
    page.get_by_role("link", name=SEED_KERNEL).first.click()

    expect(page).to_have_url(re.compile(f"#kernel-{SEED_KERNEL}$"))
    graph = page.locator("#graph-postgrad-0")
    expect(graph).to_have_attribute("data-state", "ready")
    expect(graph.locator(".graph-highlight")).to_contain_text(f"Kernel {SEED_KERNEL}: 5 nodes")
    assert set(graph.get_attribute("data-highlighted").split()) == {"sin", "cos", "mul", "tanh", "add"}
    expect(page.locator("#source #L-6")).to_have_class(re.compile(r"\bhl\b"))
    expect(page.locator("#source #L-5")).not_to_have_class(re.compile(r"\bhl\b"))
    card = page.locator(f"#kernel-{SEED_KERNEL}")
    expect(card).to_have_class(re.compile("selected"))
    expect(card.locator(f"#k-{SEED_KERNEL}-20")).to_contain_text("tmp0.sin()")  # the source, line-anchored
    expect(page.locator("#inductor-kernels .ceiling")).to_contain_text("no copy bandwidth has been measured")


def test_a_node_link_opens_on_the_node_and_its_line_shows_every_stage(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "seed", "dynamo") + "#graph-dynamo-0/mul")
    graph = page.locator("#graph-dynamo-0")
    expect(graph).to_have_attribute("data-selected", "mul")
    details = graph.locator(".graph-info")
    expect(details).to_contain_text("_operator.mul")
    expect(details).to_contain_text("[1024,1024]")
    expect(details).to_contain_text("float32")
    expect(details.locator("a.line-link")).to_have_text("seed.py:6")
    # An input is a tag above its readers; its node can still be selected by name.
    expect(details).to_contain_text("sin")
    details.get_by_role("button", name="sin").click()
    expect(graph).to_have_attribute("data-selected", "sin")
    expect(page).to_have_url(re.compile("#graph-dynamo-0/sin$"))

    graph.locator(".graph-info a.line-link").click()
    box = page.locator("#line-provenance")
    expect(box).to_be_visible()
    expect(box.locator("h3")).to_have_text("Line 6")
    expect(box).to_contain_text("Dynamo nodes (5)")
    # A graph of another tab links to that tab (the tab of a graph id: static/js/contract.js, from contract/graphs.py).
    expect(box.locator("a.graph-link", has_text=re.compile("^Post-grad")).first).to_have_attribute(
        "href", re.compile(r"/inductor#graph-postgrad-0$")
    )
    for name in ("sin", "cos", "mul", "tanh", "add"):
        expect(box.locator("a.node-link", has_text=re.compile(f"^{name}$")).first).to_be_visible()
    expect(box.get_by_role("link", name=SEED_KERNEL)).to_have_attribute(
        "href", re.compile(f"/inductor#kernel-{SEED_KERNEL}$")
    )
    expect(graph).to_have_attribute("data-highlighted", "sin cos mul tanh add")

    box.get_by_role("link", name=SEED_KERNEL).click()  # across tabs: the kernel's page opens on it
    expect(page.locator(f"#kernel-{SEED_KERNEL}")).to_have_class(re.compile("selected"))


def test_mlp_forward_graph_marks_saved_values_and_the_joint_graph_recomputed_ones(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "mlp_train", "aot") + "#graph-aot-1/addmm")
    forward = page.locator("#graph-aot-1")
    expect(forward.locator(".graph-head h3")).to_have_text("Forward graph 0/0")
    expect(forward).to_have_attribute("data-selected", "addmm")
    expect(forward.locator(".graph-info")).to_contain_text("saved for backward")
    expect(forward.locator(".graph-legend")).to_contain_text("saved for backward")
    expect(forward.locator(".graph-info")).to_contain_text("fc1 (Linear)")  # the module path

    saved = page.locator("#aot-partitions").get_by_text("Saved for backward (8)")
    expect(saved).to_be_visible()
    page.locator("#aot-partitions a.node-link", has_text="mul_2").first.click()
    expect(forward).to_have_attribute("data-selected", "mul_2")

    page.goto(report_url(site, sample_runs, "mlp_train", "aot") + "#graph-aot-0/erf")
    joint = page.locator("#graph-aot-0")
    expect(joint.locator(".graph-info")).to_contain_text("recomputed in backward")
    expect(joint.locator(".graph-legend")).to_contain_text("backward part of the joint graph")


def test_search_and_module_boxes(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "mlp_train", "aot") + "#graph-aot-1")
    forward = page.locator("#graph-aot-1")
    expect(forward).to_have_attribute("data-state", "ready")
    forward.locator(".graph-search").fill("addmm")
    expect(forward.locator(".graph-highlight")).to_contain_text("Search “addmm”: 2 nodes")
    forward.locator(".graph-search").press("Enter")
    expect(forward).to_have_attribute("data-selected", "addmm")

    opened = int(forward.get_attribute("data-visible"))
    forward.get_by_role("button", name="Collapse all").click()
    expect(forward).not_to_have_attribute("data-visible", str(opened))
    collapsed = int(forward.get_attribute("data-visible"))
    assert collapsed < opened  # fc1, act, fc2, norm are one box each
    forward.get_by_role("button", name="Expand all").click()
    expect(forward).to_have_attribute("data-visible", str(opened))


def test_functionalization_and_decompositions(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "mlp_train", "aot"))
    functionalization = page.locator("#aot-functionalization")
    expect(functionalization.locator("table.records tbody tr").first).to_contain_text("aten.t")
    expect(functionalization.locator("table.records tbody tr").first).to_contain_text("view")
    before = page.locator("#graph-func-0-before")
    before.scroll_into_view_if_needed()
    expect(before).to_have_attribute("data-state", "ready")
    expect(before.locator(".graph-legend")).to_contain_text("view op (functionalization rewrites it)")

    decompositions = page.locator("#aot-decompositions")
    gelu = decompositions.locator("table.decomposition-map tr").filter(
        has=page.locator("td:first-child", has_text=re.compile(r"^aten\.gelu$"))
    )
    expect(gelu).to_contain_text("aten.erf ×2")
    expect(gelu).to_contain_text("aten.mul ×4")
    decompositions.locator(".chart").scroll_into_view_if_needed()  # charts are drawn when they come into view
    expect(decompositions.locator(".chart .main-svg").first).to_be_attached()  # plotly drew it, offline


def test_fusion_decisions_read_as_sentences_and_backward_kernels_select_backward_nodes(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "mlp_train", "inductor"))
    fusion = page.locator("#inductor-fusion")
    backward_fusion = fusion.locator("article.fusion", has_text="backward graph 0/0")
    fused = backward_fusion.locator("details.fusion-group.fused")
    fused.locator("summary").click()
    expect(fused.locator("ul.decisions li").first).to_contain_text("op0 (mul_6, sum_1)")
    expect(fused.locator("ul.decisions li").first).to_contain_text("+ op1 (")
    not_fused = backward_fusion.locator("details.fusion-group", has_text="they share no buffer")
    expect(not_fused.locator("summary")).to_contain_text("not fused: they share no buffer")
    not_fused.locator("summary").click()
    expect(not_fused.locator("ul.decisions li", has_text="op3").first).to_contain_text("op0 (mul_6, sum_1)")

    kernel = "cpp_fused_gelu_gelu_backward_sum_1"
    page.get_by_role("link", name=kernel).first.click()
    backward = page.locator("#graph-postgrad-1")
    expect(backward.locator(".graph-head h3")).to_have_text("Post-grad backward graph 0/0")
    expect(backward.locator(".graph-highlight")).to_contain_text(f"Kernel {kernel}: 12 nodes")
    assert "exp" in backward.get_attribute("data-highlighted").split()
    expect(page.locator("#source #L-15")).to_have_class(re.compile(r"\bhl\b"))


def test_graph_breaks_show_the_users_line_in_context_with_hints(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "graph_break", "dynamo"))
    first = page.locator("#break-1")
    expect(first.locator(".ctx-line.focus")).to_contain_text('print("halfway")')
    expect(first.locator(".ctx-line.focus .ln")).to_have_text("7")
    expect(first.locator(".ctx-line")).to_have_count(5)  # two lines either side
    expect(first.locator("ul.hints li").first).to_contain_text("Avoid calling builtin `print`")
    expect(first.locator("h3 .badge")).to_have_text("×1")
    expect(page.locator("#break-2 .ctx-line.focus")).to_contain_text(".item()")
    expect(page.locator("#dynamo-graphs .graph-card")).to_have_count(3)
    expect(page.locator("#dynamo-guards article.guards")).to_have_count(3)
    bytecode = page.locator("#bytecode-1")
    expect(bytecode.locator("h4")).to_have_text(["Original", "Transformed by Dynamo"])
    expect(bytecode.locator("pre.bytecode-text").nth(1)).to_contain_text("__compiled_fn")
    bytecode.locator("details.decompiled summary").click()
    expect(bytecode.locator("details.decompiled .listing")).to_contain_text("__compiled_fn")


def test_runtime_charts_and_the_gpu_diagnosis(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "seed", "runtime"))
    expect(page.locator("#runtime-benchmarks .chart .main-svg").first).to_be_attached()
    expect(page.locator("#runtime-benchmarks .chart")).to_contain_text("not decided (3.79x)")
    page.locator("#runtime-kernels").scroll_into_view_if_needed()  # charts are drawn when they come into view
    expect(page.locator("#runtime-compile .chart")).to_have_count(2)  # by stage, and the timeline
    expect(page.locator("#runtime-compile .chart").nth(1)).to_contain_text("backend_compile")
    expect(page.locator("#runtime-kernels .chart")).to_contain_text(SEED_KERNEL)
    expect(page.locator("#runtime-busy")).to_contain_text("GPU-busy time is measured on GPU runs only")

    page.goto(report_url(site, sample_runs, "seed_gpu", "runtime"))
    diagnosis = page.locator("#runtime-busy ul.diagnosis")
    expect(diagnosis).to_contain_text("inductor_default: host-bound. The GPU is busy only 45% of each step")
    expect(diagnosis).to_contain_text('mode="reduce-overhead"')
    page.locator("#runtime-busy .chart").scroll_into_view_if_needed()
    expect(page.locator("#runtime-busy .chart")).to_contain_text("host overhead (launches, guards, Python)")

    page.goto(report_url(site, sample_runs, "seed_gpu", "inductor"))
    row = page.locator("#inductor-kernels table.kernels tbody tr").first
    expect(row).to_contain_text("triton_poi_fused_add_cos_mul_sin_tanh_0")
    expect(row.locator("td").nth(4)).to_have_text("134 MB")
    expect(row.locator("td").nth(4)).to_have_attribute("title", "134,217,728 bytes")
    expect(row.locator("td").nth(3)).to_have_text(re.compile(r"^\s*2.71 TB/s\s*63.5%\s*$"))
    expect(page.locator("#inductor-kernels .ceiling")).to_contain_text("measured on an NVIDIA H200, 4.27 TB/s")


def test_presentation_mode_and_print_hide_the_chrome(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "seed", "dynamo"))
    expect(page.locator("header.site")).to_be_visible()
    page.get_by_role("link", name="Present").click()
    expect(page).to_have_url(re.compile(r"/dynamo\?present=1$"))
    expect(page.locator("header.site")).to_be_hidden()
    expect(page.locator("#stages")).to_be_hidden()
    assert float(page.evaluate("getComputedStyle(document.body).fontSize").rstrip("px")) >= 20
    page.locator("#tab-inductor").click()
    expect(page).to_have_url(re.compile(r"/inductor\?present=1$"))  # tabs stay in presentation mode

    page.emulate_media(media="print")
    expect(page.locator("nav.tabs")).to_be_hidden()
    expect(page.locator(f"#kernel-{SEED_KERNEL} .kernel-source")).to_be_visible()


def test_the_runtime_tab_shows_the_users_backend_rung_and_opens_the_graph_it_received(site, sample_runs, page):
    """Issue 22 item 5: examples/custom_backend.py's `backend = print_ops` is a rung; its link opens the graph."""
    page.goto(report_url(site, sample_runs, "custom_backend", "runtime"))
    row = page.locator('#runtime-benchmarks tr[data-config="user:print_ops"]')
    expect(row).to_contain_text("your backend print_ops")
    row.locator("a.backend-graph-link").click()
    expect(page).to_have_url(re.compile("#graph-backend-0$"))
    graph = page.locator("#graph-backend-0")
    expect(graph).to_be_in_viewport()
    expect(graph).to_have_attribute("data-state", "ready")
    expect(graph.locator("h3")).to_have_text("Graph your backend received, compile 0/1")
    page.goto(report_url(site, sample_runs, "custom_backend", "runtime") + "#graph-backend-0/relu")
    expect(graph).to_have_attribute("data-selected", "relu")
    details = graph.locator(".graph-info")
    expect(details).to_contain_text("torch.relu")
    expect(details.locator("a.line-link")).to_have_text("custom_backend.py:21")  # the user's line
    details.locator("a.line-link").click()
    box = page.locator("#line-provenance")
    expect(box).to_contain_text("Nodes your backends received (4)")


def test_color_by_time_colors_each_node_by_its_kernels_share_of_the_step(site, sample_runs, page):
    """Issue 24 item 4 on the CPU: the post-grad graph of a training run (three kernels of the profiled step) in the
    time overlay: the legend lists the kernels slowest first with the report's shares, a node's details say its
    kernel's share, and the toggle restores the kernels' own colors."""
    from tests.support import read_sample_report

    profile = read_sample_report("activation_chain")["runtime"]["kernel_profile"]
    shares = {row["kernel"]: row["share"] for row in profile if row["kernel"]}
    page.goto(report_url(site, sample_runs, "activation_chain", "inductor") + "#graph-postgrad-1/sum_1")
    graph = page.locator("#graph-postgrad-1")  # the backward graph
    expect(graph).to_have_attribute("data-selected", "sum_1")
    button = graph.locator("[data-action=time]")
    button.click()
    expect(graph).to_have_attribute("data-overlay", "time")
    expect(button).to_have_attribute("aria-pressed", "true")
    legend = graph.locator(".graph-legend .legend-entry")
    backward = [k for k in shares if k in graph.locator(".graph-legend").inner_text()]
    assert backward, graph.locator(".graph-legend").inner_text()
    expected = [f"{k} {100 * shares[k]:.1f}%" for k in sorted(backward, key=lambda k: -shares[k])]
    assert legend.all_inner_texts()[: len(expected)] == expected
    kernel = graph.locator(".graph-info a.kernel-link").inner_text()
    expect(graph.locator(".graph-info")).to_contain_text(f"{100 * shares[kernel]:.1f}% of the profiled step")
    button.click()
    expect(graph).to_have_attribute("data-overlay", "")
    expect(graph.locator(".graph-legend")).not_to_contain_text("Share of the profiled step")


def test_color_by_time_on_the_dynamo_graph_follows_the_users_lines(site, sample_runs, page):
    """The same overlay on Dynamo's graph, through provenance: a node takes the time of the kernels built from its
    line (the seed: one kernel from line 6, the whole profiled step), fetched when first asked for."""
    page.goto(report_url(site, sample_runs, "seed", "dynamo") + "#graph-dynamo-0/mul")
    graph = page.locator("#graph-dynamo-0")
    expect(graph).to_have_attribute("data-selected", "mul")
    graph.locator("[data-action=time]").click()
    expect(graph).to_have_attribute("data-overlay", "time")
    expect(graph.locator(".graph-legend")).to_contain_text(f"line 6 100.0% ({SEED_KERNEL})")
    expect(graph.locator(".graph-info")).to_contain_text(f"in the kernels built from line 6: {SEED_KERNEL}")


GPU_DEPTH = "seed_gpu_device_code"  # the H200 report with its kernel compiled here (tests/fixtures/triton/record_device_code.py)


def test_device_code_maps_source_lines_to_each_ir_stage_and_back(site, sample_runs, page):
    from tests.support import read_sample_report

    kernel = next(
        k for k in read_sample_report(GPU_DEPTH)["inductor"]["kernels"] if (k["device_code"] or {}).get("stages")
    )
    stages = {s["stage"]: s for s in kernel["device_code"]["stages"]}
    by_source: dict[int, list[int]] = {}
    for ir_line, source_line in stages["sass"]["lines"]:
        by_source.setdefault(source_line, []).append(ir_line)
    line = max(by_source, key=lambda n: len(by_source[n]))  # the source line with the most SASS lines
    name = kernel["name"]
    page.goto(report_url(site, sample_runs, GPU_DEPTH, "inductor") + f"#kernel-{name}")
    card = page.locator(f"#kernel-{name}")
    card.locator("details.device-code-fold > summary").click()
    box = card.locator(".device-code")
    expect(box.locator(".ir-tab")).to_have_count(len(stages))
    expect(box.locator(".ir-tab[aria-selected=true]")).to_contain_text("SASS")

    box.locator(f"#dk-{name}-{line}").click()
    expect(box.locator(".ir-stage[data-stage=sass] .ir-mapped")).to_have_count(len(by_source[line]))
    expect(box.locator(".ir-hint")).to_contain_text(f"Source line {line}: {len(by_source[line])} SASS line")
    expect(box.locator(f"#dk-{name}-{line}")).to_have_class(re.compile(r"\bir-mapped\b"))

    ttir = [ir for ir, src in stages["ttir"]["lines"] if src == line]
    box.locator(".ir-tab[data-stage=ttir]").click()  # the selection follows the stage shown
    expect(box.locator(".ir-stage[data-stage=ttir] .ir-mapped")).to_have_count(len(ttir))

    other_ir, other_source = next((ir, src) for ir, src in stages["ttir"]["lines"] if src != line)
    box.locator(f"#ir-{name}-ttir-{other_ir}").click()  # and back: an IR line marks its source line
    expect(box.locator(f"#dk-{name}-{other_source}")).to_have_class(re.compile(r"\bir-mapped\b"))
    expect(box.locator(f"#dk-{name}-{line}")).not_to_have_class(re.compile(r"\bir-mapped\b"))


def test_the_roofline_is_drawn_on_the_inductor_tab(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "seed_roofline_cpu", "inductor"))
    roofline = page.locator("#inductor-roofline")
    roofline.scroll_into_view_if_needed()  # charts are drawn when they come into view
    expect(roofline.locator(".chart .main-svg").first).to_be_attached()
    expect(roofline.locator(".chart")).to_contain_text("memory-bound kernels")
    expect(roofline.locator(".roofline-words")).to_contain_text("1 of 1 placed kernel is memory-bound")
