"""Your own backend: a function that receives Dynamo's FX graph and example inputs, prints the ops, and runs it."""

import torch


def print_ops(gm: torch.fx.GraphModule, example_inputs):
    # Dynamo calls this once per graph it captures: gm is the FX graph, example_inputs the tensors it will be called with.
    ops = [node.target for node in gm.graph.nodes if node.op in ("call_function", "call_method", "call_module")]
    print(f"print_ops got a graph of {len(gm.graph.nodes)} nodes: {', '.join(map(str, ops))}")
    print("example inputs:", [tuple(t.shape) if isinstance(t, torch.Tensor) else t for t in example_inputs])
    return gm.forward  # run the graph as it is: what backend="eager" does


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))).softmax(dim=-1)


model = MLP()
example_inputs = (torch.randn(16, 32),)
backend = print_ops  # a rung "user:print_ops" of the ladder; several: backends = {"name": fn, ...}
