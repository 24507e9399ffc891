"""Download repro.py (issue 23 item 1, graphs): each recorded graph's script, downloaded from the page of a real
report and run in a fresh Python process, runs standalone and counts the same ops the report recorded; its compiled
run gives eager's outputs. Graphs that cannot run alone are refused in words."""

import base64
import os
import re
import subprocess
import sys

import pytest

from tests.support import read_sample_report, sample_site

NAMES = ("activation_chain", "dynamic_sizes", "seed", "recompile", "mlp_train")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return sample_site(tmp_path_factory.mktemp("repro"), NAMES)


def download(site, name: str, graph_id: str):
    client, slugs = site
    return client.get(f"/r/{slugs[name]}/graphs/{graph_id}/repro.py")


def run_repro(tmp_path, script: str, *args: str) -> str:
    path = tmp_path / "repro.py"
    path.write_text(script)
    done = subprocess.run(
        [sys.executable, str(path), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": ""},  # nothing of pt2scope: the script stands alone
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize(
    "name, graph_id",
    [
        ("activation_chain", "dynamo-0"),  # Dynamo's graph, the parameters as inputs
        ("activation_chain", "aot-0"),  # the joint graph: primals and tangents
        ("activation_chain", "aot-2"),  # the backward graph: saved tensors and tangents
        ("activation_chain", "postgrad-1"),  # Inductor's post-grad backward graph (no annotations: node shapes)
        ("dynamic_sizes", "dynamo-1"),  # compiled with a symbolic batch: the symbol's recorded value
    ],
)
def test_a_graphs_repro_runs_alone_with_the_recorded_ops(site, tmp_path, name, graph_id):
    response = download(site, name, graph_id)
    assert response.status_code == 200 and response.mimetype == "text/x-python"
    assert f"{graph_id}-repro.py" in response.headers["Content-Disposition"]
    out = run_repro(tmp_path, response.get_data(as_text=True), "--backend", "aot_eager")
    report = read_sample_report(name)
    graph = next(g for gid, g in graph_entries(report) if gid == graph_id)
    assert "ops match the report" in out, out
    assert re.search(r"max abs difference from eager 0 \(0 of the largest output\)\n", out), out  # same ops
    assert sum(int(n) for n in re.findall(r'": (\d+)', out.splitlines()[0])) == sum(graph["ops"].values())


def test_the_repro_compiles_as_the_run_did_by_default(site, tmp_path):
    script = download(site, "seed", "postgrad-0").get_data(as_text=True)
    assert "default='inductor'" in script  # the seed's recorded config: inductor_default
    out = run_repro(tmp_path, script)
    difference = float(re.search(r"backend=inductor mode=default: max abs difference from eager (\S+)", out)[1])
    assert difference < 1e-4, out


def test_a_graph_whose_symbol_has_no_recorded_value_is_refused_in_words(site):
    # recompile.json predates dynamo.symbols: its dynamic graph's size s77 has no value to make an input of.
    response = download(site, "recompile", "dynamo-1")
    assert response.status_code == 422
    assert "the size s77 is symbolic and the report records no value for it" in response.get_data(as_text=True)
    assert download(site, "seed", "func-0-before").status_code == 404


def test_every_graph_viewer_offers_its_repro(site):
    client, slugs = site
    page = client.get(f"/r/{slugs['activation_chain']}/aot").get_data(as_text=True)
    links = re.findall(r'<a class="repro-download" href="([^"]+)"', page)
    assert {link.rsplit("/", 2)[1] for link in links} == {"aot-0", "aot-1", "aot-2"}, links


def graph_entries(report):
    from contract.graphs import report_graphs

    return report_graphs(report)


def test_the_offline_file_carries_each_repro_inside_it(site):
    client, slugs = site
    html = client.get(f"/r/{slugs['seed']}/export.html").get_data(as_text=True)
    links = re.findall(r'<a class="repro-download" href="data:([^;]+);base64,([^"]+)"', html)
    assert {mimetype for mimetype, _ in links} == {"text/x-python"}, "a repro link leaves the offline file"
    inside = {base64.b64decode(data).decode() for _, data in links}
    inside = {script for script in inside if script.startswith('"""Repro of')}  # kernels' scripts: below
    assert inside == {download(site, "seed", gid).get_data(as_text=True) for gid in ("dynamo-0", "aot-0", "postgrad-0")}


# --- kernels -------------------------------------------------------------------------------------------------------


def kernel_index(name: str, kernel: str) -> int:
    return [k["name"] for k in read_sample_report(name)["inductor"]["kernels"]].index(kernel)


def test_a_kernels_repro_runs_it_alone_and_it_computes_what_pytorch_does(site, tmp_path):
    import torch

    # The seed's kernel, recorded with AVX2 code (8 floats a vector): the script builds it for that width.
    index = kernel_index("seed", "cpp_fused_add_cos_mul_sin_tanh_0")
    response = site[0].get(f"/r/{site[1]['seed']}/kernels/{index}/repro.py")
    assert response.status_code == 200 and response.mimetype == "text/x-python"
    assert f"kernel-{index}-repro.py" in response.headers["Content-Disposition"]
    script = response.get_data(as_text=True)
    assert "VECTOR_BITS = 256" in script
    out = run_repro(tmp_path, script, "--calls", "20", "--save", "args.pt")
    assert "kernel cpp_fused_add_cos_mul_sin_tanh_0 " in out and "float32[1024, 1024] cpu, float32[1024, 1024]" in out
    assert "alone, it writes what it wrote inside the graph" in out, out
    median = float(re.search(r"wall time per launch: median (\S+) us", out)[1])
    assert "GPU time per launch" not in out  # the profiler's GPU figure: on a GPU only
    assert 0 < median < 1e6
    saved = torch.load(tmp_path / "args.pt")
    (x, _), _ = saved["before"]
    (_, written), _ = saved["after"]
    torch.testing.assert_close(written, torch.sin(x) * torch.cos(x) + torch.tanh(x))  # the seed's own function


def test_a_backward_kernels_repro_runs_it_alone(site, tmp_path):
    index = kernel_index("mlp_train", "cpp_fused_add_native_layer_norm_native_layer_norm_backward_sum_0")
    script = site[0].get(f"/r/{site[1]['mlp_train']}/kernels/{index}/repro.py").get_data(as_text=True)
    out = run_repro(tmp_path, script, "--calls", "20")
    source = read_sample_report("mlp_train")["inductor"]["kernels"][index]["source"]
    pointers = re.findall(r"\w+\* \w*ptr\d+", source[: source.index(")")])  # the C++ kernel's parameters
    assert out.count("float32[") == len(pointers) > 4, out  # every buffer the backward graph passes it
    assert "alone, it writes what it wrote inside the graph" in out, out


def test_every_kernel_fold_offers_its_repro_and_the_offline_file_carries_them(site, monkeypatch):
    from webapp.views import export

    client, slugs = site
    page = client.get(f"/r/{slugs['mlp_train']}/inductor").get_data(as_text=True)
    links = re.findall(r'<a class="repro-download"\s+href="(/r/[^"]+/kernels/(\d+)/repro\.py)"', page)
    assert sorted(int(i) for _, i in links) == [0, 1, 2, 3], links
    html = client.get(f"/r/{slugs['mlp_train']}/export.html").get_data(as_text=True)
    inside = re.findall(r'<a class="repro-download"\s+href="data:text/x-python;base64,([^"]+)"', html)
    scripts = {base64.b64decode(data).decode() for data in inside}
    scripts = {script for script in scripts if script.startswith('"""Inductor\'s kernel')}  # not the graphs' scripts
    assert scripts == {client.get(link).get_data(as_text=True) for link, _ in links}
    # Past its budget the file says where to download the rest.
    monkeypatch.setattr(export, "KERNEL_SCRIPTS_BYTES", len(max(scripts, key=len)) + 1)
    html = client.get(f"/r/{slugs['mlp_train']}/export.html").get_data(as_text=True)
    told = re.findall(r'<a class="repro-download"\s+href="data:text/plain;base64,([^"]+)"', html)
    assert any("download this one from the run's page" in base64.b64decode(t).decode() for t in told)
