"""A 24-layer residual MLP in training: a few thousand nodes in each of the joint, forward and backward graphs,
the size issue 10 asks every report tab to stay fast at."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm, self.fc1, self.act, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class ResidualMLP(nn.Module):
    def __init__(self, d=32, layers=24):
        super().__init__()
        self.blocks = nn.Sequential(*(Block(d) for _ in range(layers)))
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        return self.head(self.blocks(x)).sum()


model = ResidualMLP()
example_inputs = (torch.randn(16, 32),)
train = True
