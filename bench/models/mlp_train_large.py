"""An MLP of 1024 -> 4096 -> 1024 with GELU and LayerNorm, bf16, batch 64x128, forward + backward: the team's first
H200 baseline (29 November 2026: eager 0.86 ms a step; Inductor's step host-bound)."""
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, d=1024, hidden=4096):
        super().__init__()
        self.fc1, self.act, self.fc2, self.norm = nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d), nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.fc2(self.act(self.fc1(x))))


model = MLP().to(torch.bfloat16)
example_inputs = (torch.randn(64, 128, 1024, dtype=torch.bfloat16),)
train = True
