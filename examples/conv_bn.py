"""Conv + BatchNorm + ReLU, the classic vision block (in eval mode Inductor can fold the norm)."""
import torch
from torch import nn

model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
).eval()
example_inputs = (torch.randn(4, 3, 32, 32),)
