"""FLOPs of FX graph nodes, as torch.utils.flop_counter counts them (matmuls, convolutions, attention; every other
op counts 0), from the fake tensors the graph carries (``node.meta["val"]``): nothing is run."""

from __future__ import annotations

import torch


def node_flops(graph: torch.fx.Graph) -> dict[str, int]:
    """{node name: FLOPs} for the call_function nodes of ``graph`` that flop_counter has a formula for."""
    from torch.utils.flop_counter import flop_registry

    out = {}
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        formula = flop_registry.get(getattr(node.target, "overloadpacket", None))
        if formula is None:
            continue
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get("val"))
        try:
            out[node.name] = int(formula(*args, **kwargs, out_val=node.meta.get("val")))
        except Exception:  # noqa: BLE001 - a node without fake values (or a formula this torch changed): not counted
            continue
    return out
