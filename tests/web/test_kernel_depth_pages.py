"""Issue 24's pages from recorded reports: autotuning per rung on the Runtime tab (frozen_linear, CPU
max-autotune), the roofline on the Inductor tab (the seed on the CPU), each step split into GPU busy and host time
(seed_gpu), and a Triton kernel's device code with its line maps (seed_gpu_device_code: the H200 report's kernel
compiled by this machine's Triton, tests/fixtures/triton/record_device_code.py); on an H100's own reports
(transformer_block_gpu, conv_bn_gpu), max-autotune's Triton templates against cuBLAS and every kernel's stages."""

import base64
import html
import json
import re

import pytest

from tests.support import read_sample_report, sample_site

NAMES = (
    "frozen_linear",
    "seed_roofline_cpu",
    "seed_gpu",
    "seed_gpu_device_code",
    "transformer_block_gpu",
    "conv_bn_gpu",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return sample_site(tmp_path_factory.mktemp("kernel_depth"), NAMES)


def section(page: str, section_id: str) -> str:
    start = page.index(f'<section id="{section_id}"')
    return page[start : page.index("</section>", start)]


def chart_in(fragment: str) -> dict:
    return json.loads(html.unescape(re.search(r"data-chart='([^']+)'", fragment)[1]))


def words(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment)))


def test_autotuning_lists_each_decision_its_candidates_and_the_winner(site):
    client, slugs = site
    decisions = read_sample_report("frozen_linear")["runtime"]["autotune"]
    page = client.get(f"/r/{slugs['frozen_linear']}/runtime").get_data(as_text=True)
    autotune = section(page, "runtime-autotune")
    assert autotune.count('class="autotune-row"') == len(decisions) == 2
    text = words(autotune)
    for decision in decisions:
        chosen, runner_up = decision["choices"][:2]
        assert f"All {len(decision['choices'])} candidates" in text
        assert f"{runner_up['ms'] / chosen['ms']:.3g}x faster than" in text
    assert "float32[64, 256]" in text and "float32[64, 512]" in text


def test_a_run_without_autotuning_says_how_to_get_it(site):
    client, slugs = site
    page = client.get(f"/r/{slugs['seed_roofline_cpu']}/runtime").get_data(as_text=True)
    assert "add the inductor_max_autotune config" in words(section(page, "runtime-autotune"))


def test_the_roofline_places_the_seed_kernel_under_the_measured_roofs(site):
    client, slugs = site
    report = read_sample_report("seed_roofline_cpu")
    rt = report["runtime"]
    [row] = [r for r in rt["kernel_profile"] if r["kernel"]]
    page = client.get(f"/r/{slugs['seed_roofline_cpu']}/inductor").get_data(as_text=True)
    start = page.index('<div id="inductor-roofline">')
    roofline = page[start : page.index("</ul>", start)]
    figure = chart_in(roofline)
    [roof] = [t for t in figure["data"] if t["mode"] == "lines"]
    bandwidth, peak = rt["memory_bandwidth"]["bytes_per_s"], rt["compute_peaks"]["fp32"]
    # The roof's bend is the ridge point: the FP32 peak reached at peak / bandwidth FLOP per byte.
    assert roof["x"][1] == pytest.approx(peak / bandwidth) and roof["y"][1] == pytest.approx(peak)
    assert roof["y"][0] == pytest.approx(roof["x"][0] * bandwidth)
    [points] = [t for t in figure["data"] if t["mode"] == "markers"]
    assert points["name"] == "memory-bound kernels"
    assert points["x"] == [pytest.approx(row["arithmetic_intensity"])]
    assert points["y"] == [pytest.approx(row["flops_per_s"])]
    text = words(roofline)
    assert "1 of 1 placed kernel is memory-bound" in text
    assert f"reaches {100 * row['attainable_share']:.3g}% of the bandwidth roof" in text


def test_each_gpu_step_is_split_into_gpu_busy_and_host_time(site):
    client, slugs = site
    benchmarks = read_sample_report("seed_gpu")["runtime"]["benchmarks"]
    page = client.get(f"/r/{slugs['seed_gpu']}/runtime").get_data(as_text=True)
    figure = chart_in(section(page, "runtime-busy"))
    assert figure["layout"]["barmode"] == "stack"
    busy, host = figure["data"]
    for config, gpu, rest in zip(busy["x"], busy["y"], host["y"]):
        bench = next(b for b in benchmarks if b["config"] == config)
        assert gpu == pytest.approx(bench["gpu_busy_ms"]) and gpu + rest == pytest.approx(bench["median_ms"])


def test_a_kernel_fold_gives_its_launch_and_fetches_its_ir_texts_only_when_opened(site):
    client, slugs = site
    [kernel] = read_sample_report("seed_gpu_device_code")["inductor"]["kernels"]
    code = kernel["device_code"]
    page = client.get(f"/r/{slugs['seed_gpu_device_code']}/inductor").get_data(as_text=True)
    fold = page[
        page.index('<details class="device-code-fold">') : page.index("</details>", page.index("device-code-fold"))
    ]
    text = words(fold)
    assert "TTIR, TTGIR, LLIR, PTX, SASS" in text and "XBLOCK=1024" in text
    assert f"{code['num_warps']} warps" in text and f"{code['registers']} registers per thread" in text
    assert "no spills" in text and f"the chosen one of {code['compiled_variants']} configs" in text
    assert f"/r/{slugs['seed_gpu_device_code']}/part/inductor/devicecode/0" in fold
    ptx = next(s for s in code["stages"] if s["stage"] == "ptx")["text"]
    assert ".target sm_90a" in ptx and ".target sm_90a" not in page  # the tab's outline leaves the texts out


def test_the_device_code_part_carries_every_stage_with_its_line_map(site):
    client, slugs = site
    [kernel] = read_sample_report("seed_gpu_device_code")["inductor"]["kernels"]
    part = client.get(f"/r/{slugs['seed_gpu_device_code']}/part/inductor/devicecode/0").get_data(as_text=True)
    stages = re.findall(r'<div class="ir-stage" data-stage="(\w+)" data-lines="([^"]*)"', part)
    assert [name for name, _ in stages] == ["ttir", "ttgir", "llir", "ptx", "sass"]
    for (name, lines), stage in zip(stages, kernel["device_code"]["stages"]):
        assert json.loads(html.unescape(lines)) == stage["lines"], name
        last = stage["text"].count("\n")
        assert f'id="ir-{kernel["name"]}-{name}-{last}"' in part  # every line of the stage is a span of its own
    for _, source_line in kernel["device_code"]["stages"][-1]["lines"][:20]:
        assert f'id="dk-{kernel["name"]}-{source_line}"' in part


def test_the_offline_file_carries_the_device_code(site):
    client, slugs = site
    page = client.get(f"/r/{slugs['seed_gpu_device_code']}/export.html").get_data(as_text=True)
    parts = [base64.b64decode(p).decode() for p in re.findall(r'data-part-url="data:text/html;base64,([^"]+)"', page)]
    assert any('<section class="device-code"' in p and 'data-stage="sass"' in p for p in parts)


def test_max_autotune_on_the_gpu_lists_each_matmuls_templates_against_the_library(site):
    """The transformer block's four linear layers on an H100: each decision lists Triton mm templates beside
    cuBLAS (addmm, bias_addmm), with the winner first, and each generated kernel's configs benchmarked at launch."""
    client, slugs = site
    decisions = read_sample_report("transformer_block_gpu")["runtime"]["autotune"]
    matmuls = [d for d in decisions if d["kind"] == "algorithm"]
    assert len(matmuls) == 4 and {d["op"] for d in matmuls} == {"addmm"}
    for decision in matmuls:
        kinds = {c["kind"] for c in decision["choices"]}
        assert kinds == {"template", "library"}, kinds
        times = [c["ms"] for c in decision["choices"] if c["ms"] is not None]  # None: the candidate failed
        assert times == sorted(times) and decision["choices"][0]["chosen"]
        assert [c["ms"] for c in decision["choices"]][len(times) :] == [None] * (len(decision["choices"]) - len(times))
    page = client.get(f"/r/{slugs['transformer_block_gpu']}/runtime").get_data(as_text=True)
    autotune = section(page, "runtime-autotune")
    assert autotune.count('class="autotune-row"') == len(decisions)
    text = words(autotune)
    for count in {len(d["choices"]) for d in decisions}:
        assert text.count(f"All {count} candidates") == sum(len(d["choices"]) == count for d in decisions)
    assert "bfloat16[4096, 768]" in text


@pytest.mark.parametrize("name", ["transformer_block_gpu", "conv_bn_gpu"])
def test_every_kernel_of_a_gpu_report_has_its_device_code_fold(site, name):
    client, slugs = site
    """The tab draws the hottest kernel's fold at once and fetches the others' with their kernel: together, one fold
    per kernel, each with its own device-code part."""
    kernels = read_sample_report(name)["inductor"]["kernels"]
    page = client.get(f"/r/{slugs[name]}/inductor").get_data(as_text=True)
    kernel_parts = sorted(set(re.findall(rf"/r/{slugs[name]}/part/inductor/kernel/\d+", page)))
    served = [page] + [client.get(url).get_data(as_text=True) for url in kernel_parts]
    assert sum(html_.count('<details class="device-code-fold">') for html_ in served) == len(kernels)
    text = " ".join(words(html_) for html_ in served)
    for index, kernel in enumerate(kernels):
        assert any(f"/r/{slugs[name]}/part/inductor/devicecode/{index}" in html_ for html_ in served)
        assert f"{kernel['device_code']['registers']} registers per thread" in text
