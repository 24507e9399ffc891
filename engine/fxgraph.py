"""FX graphs as plain data: one serializer shared by every stage (Dynamo, AOTAutograd, post-grad).

A node becomes {"name", "op", "target", "args" (names of the nodes it reads: the graph's edges), "shape",
"dtype", "file", "line", "code", "module_stack"}; stages add their own marks under "marks".
Must run inside the compile hooks: node.meta is gone once the compile finishes.
"""

from __future__ import annotations

import torch
import torch.fx

from engine.readers.nodes import user_frames


def target_name(node: torch.fx.Node) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        return str(target)  # e.g. "aten.sin.default"
    try:
        return torch.fx.node._get_qualified_name(target)  # e.g. "torch.sin", "_operator.mul"
    except Exception:
        return getattr(target, "__name__", repr(target))


def _value_meta(value) -> tuple:
    """(shape, dtype) of a node's example value; tuples of tensors give lists."""
    if isinstance(value, torch.Tensor):
        return [_dim(d) for d in value.shape], str(value.dtype).removeprefix("torch.")
    if isinstance(value, list | tuple) and value and all(isinstance(v, torch.Tensor) for v in value):
        return [[_dim(d) for d in v.shape] for v in value], [str(v.dtype).removeprefix("torch.") for v in value]
    if isinstance(value, torch.SymInt | torch.SymFloat | int | float | bool):
        return None, type(value).__name__ if not isinstance(value, torch.SymInt) else "SymInt"
    return None, None


def _dim(d):
    return int(d) if isinstance(d, int) else str(d)


def serialize_node(node: torch.fx.Node, user_file: str) -> dict:
    value = node.meta.get("val", node.meta.get("example_value"))
    shape, dtype = _value_meta(value)
    if shape is None and dtype is None and "tensor_meta" in node.meta and node.meta["tensor_meta"] is not None:
        tm = node.meta["tensor_meta"]
        if hasattr(tm, "shape"):
            shape, dtype = [_dim(d) for d in tm.shape], str(tm.dtype).removeprefix("torch.")
    frames = user_frames(node.meta.get("stack_trace"), user_file)
    innermost = frames[-1] if frames else {}
    entry = {
        "name": node.name,
        "op": node.op,
        "target": target_name(node),
        "args": [n.name for n in node.all_input_nodes],
        "shape": shape,
        "dtype": dtype,
        "file": innermost.get("file"),
        "line": innermost.get("line"),
        "code": innermost.get("code"),
        "module_stack": [
            {"path": path, "type": getattr(cls, "__qualname__", str(cls))}
            for path, cls in (node.meta.get("nn_module_stack") or {}).values()
        ],
    }
    original = node.meta.get("original_aten")
    if original is not None:
        entry["original_aten"] = str(original)
    return entry


def serialize_graph(gm: torch.fx.GraphModule | torch.fx.Graph, user_file: str, **fields) -> dict:
    """{"nodes": [...], "code": readable Python, **fields}. ``code`` comes from print_readable where possible."""
    graph = gm.graph if isinstance(gm, torch.fx.GraphModule) else gm
    nodes = [serialize_node(n, user_file) for n in graph.nodes]
    try:
        code = gm.print_readable(print_output=False, include_stride=False, include_device=True)
    except Exception:
        code = graph.python_code("self").src
    return {**fields, "nodes": nodes, "num_nodes": len(nodes), "code": code}
