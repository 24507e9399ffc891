"""The time overlay's data (issue 24 item 4), from real reports: a post-grad graph card carries each kernel's
share of the profiled step as the report has it; the Dynamo graphs' overlay (fetched when asked for) gives each
line of the user's file the kernels built from it with their shares summed; the offline file carries it."""

import base64
import json
import re

import pytest

from tests.support import read_sample_report, sample_site

NAMES = ("seed", "activation_chain", "graph_break")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return sample_site(tmp_path_factory.mktemp("time_overlay"), NAMES)


def profile_shares(name: str) -> dict:
    rows = read_sample_report(name)["runtime"]["kernel_profile"]
    return {r["kernel"]: r["share"] for r in rows if r["kernel"]}


def test_each_post_grad_card_carries_the_kernels_shares(site):
    client, slugs = site
    page = client.get(f"/r/{slugs['activation_chain']}/inductor").get_data(as_text=True)
    cards = re.findall(r'<section class="graph-card" id="graph-(postgrad-\d)"[^>]*\s+data-times="([^"]+)"', page)
    assert [gid for gid, _ in cards] == ["postgrad-0", "postgrad-1"]
    overlay = json.loads(cards[0][1].replace("&#34;", '"'))
    assert overlay["by"] == "kernel"
    assert {k: v["share"] for k, v in overlay["times"].items()} == pytest.approx(
        profile_shares("activation_chain"), abs=1e-6
    )


def test_the_dynamo_overlay_gives_each_line_its_kernels_time(site):
    client, slugs = site
    report = read_sample_report("activation_chain")
    shares = profile_shares("activation_chain")
    expected: dict[str, float] = {}
    for kernel in report["inductor"]["kernels"]:
        for line in {s["line"] for s in kernel["source_lines"]}:
            expected[str(line)] = expected.get(str(line), 0.0) + shares.get(kernel["name"], 0.0)
    page = client.get(f"/r/{slugs['activation_chain']}/dynamo").get_data(as_text=True)
    url = f"/r/{slugs['activation_chain']}/line-times.json"
    assert f'data-times-url="{url}"' in page and 'data-action="time"' in page
    overlay = client.get(url).get_json()
    assert overlay["by"] == "line" and overlay["times"]
    assert {line: t["share"] for line, t in overlay["times"].items()} == pytest.approx(
        {line: share for line, share in expected.items() if share}, abs=1e-5
    )
    # The seed: one kernel from line 6, the whole profiled step.
    seed = client.get(f"/r/{slugs['seed']}/line-times.json").get_json()
    assert seed["times"] == {
        "6": {
            "share": 1.0,
            "ms": pytest.approx(seed["times"]["6"]["ms"]),
            "kernels": ["cpp_fused_add_cos_mul_sin_tanh_0"],
        }
    }


def test_a_run_without_kernels_offers_no_overlay(site):
    client, slugs = site
    page = client.get(f"/r/{slugs['graph_break']}/dynamo").get_data(as_text=True)
    assert "data-times-url" not in page and 'data-action="time"' not in page


def test_the_offline_file_carries_the_dynamo_overlay(site):
    client, slugs = site
    html = client.get(f"/r/{slugs['seed']}/export.html").get_data(as_text=True)
    inside = re.findall(r'data-times-url="data:application/json;base64,([^"]+)"', html)
    assert inside and "/line-times.json" not in html
    assert json.loads(base64.b64decode(inside[0]))["times"]["6"]["kernels"] == ["cpp_fused_add_cos_mul_sin_tanh_0"]
