"""Models from the libraries people paste first, torchvision and Hugging Face transformers (the gallery's resnet18
and hf_bert), run in a job: the worker's environment has both (requirements/torch.txt, requirements/engine.txt),
and the job's sandbox reads them from the read-only Python environment, with no network (nothing is downloaded)."""

import pytest

from engine.sandbox import Isolation
from tests.engine.conftest import NO_INDUCTOR

CHEAP = ["eager", "aot_eager"]  # Dynamo and AOTAutograd recorded, no C++ compile


@pytest.fixture(scope="module")
def resnet18(explore):
    return explore("resnet18", CHEAP)


@pytest.fixture(scope="module")
def hf_bert(explore):
    return explore("hf_bert", CHEAP)


def _targets(graph: dict) -> list[str]:
    return [str(n["target"]) for n in graph["nodes"] if n["op"].startswith("call_")]


@pytest.mark.parametrize("name", ["resnet18", "hf_bert"])
def test_the_model_runs_sandboxed_and_matches_eager(name, request):
    report = request.getfixturevalue(name)
    assert report["status"] == "ok", report["failure"]
    assert report["isolation"]["mode"] == Isolation.from_env().mode  # bubblewrap unless PT2SCOPE_ISOLATION=none
    by_config = {b["config"]: b for b in report["runtime"]["benchmarks"]}
    assert list(by_config) == CHEAP and set(CHEAP) <= set(NO_INDUCTOR)
    assert by_config["aot_eager"]["status"] == "ok" and by_config["aot_eager"]["max_abs_error"] < 1e-4
    assert report["errors"] == []


def _forward(report: dict) -> dict:
    return next(g for g in report["aot"]["graphs"] if g["kind"] in ("forward", "inference"))


def test_resnet18_is_captured_whole_with_every_convolution(resnet18):
    assert resnet18["dynamo"]["graph_breaks"] == []
    (graph,) = resnet18["dynamo"]["graphs"]
    targets = _targets(graph)
    # ResNet-18: the stem, 16 in the basic blocks, 3 downsample shortcuts, each with its batch norm; one classifier.
    assert targets.count("torch.conv2d") == 20 and targets.count("torch.nn.functional.batch_norm") == 20
    aten = _targets(_forward(resnet18))
    assert aten.count("aten.convolution.default") == 20 and "aten.addmm.default" in aten


def test_the_transformers_model_is_captured_whole_down_to_attention(hf_bert):
    assert hf_bert["dynamo"]["graph_breaks"] == []
    (graph,) = hf_bert["dynamo"]["graphs"]
    # Two layers of q, k, v, attention output, intermediate and output projections, then the pooler.
    assert _targets(graph).count("torch._C._nn.linear") == 2 * 6 + 1
    aten = _targets(_forward(hf_bert))
    assert "aten.embedding.default" in aten
    assert any(t.startswith("aten._scaled_dot_product") for t in aten)
