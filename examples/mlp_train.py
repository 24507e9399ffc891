"""A small training MLP: forward, backward, and the activations saved between them."""
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, d=64, hidden=256):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.fc2(self.act(self.fc1(x))))


model = MLP()
example_inputs = (torch.randn(32, 64),)
train = True
