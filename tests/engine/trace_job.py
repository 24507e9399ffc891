"""A small job run with TORCH_TRACE by tests/engine/test_trace_import.py (and bench/trace_import.py): one graph
break under backend="eager", a training step under "aot_eager", a recompile, and one Inductor compile."""

import torch
import torch.nn.functional as F


def broken(x):
    y = torch.sin(x) * 2
    print("a graph break")  # line 10: the break
    return torch.cos(y) + 1


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(8, 16)
        self.l2 = torch.nn.Linear(16, 8)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x))) + x  # line 21


def fused(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)  # line 25


torch.compile(broken, backend="eager")(torch.randn(4, 8))
model = torch.compile(MLP(), backend="aot_eager", dynamic=False)
model(torch.randn(4, 8)).sum().backward()
model(torch.randn(6, 8)).sum().backward()  # a new size: a recompile
torch.compile(fused, backend="inductor")(torch.randn(64))
