"""The seed: three pointwise ops that Inductor fuses into one kernel."""
import torch


def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


model = f
example_inputs = (torch.randn(1024, 1024),)
