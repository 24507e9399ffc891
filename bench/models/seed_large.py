"""The seed at a size that fills a GPU (4096x4096 fp32: 64 MB in, 64 MB out), as in ../shared/notes/gpu-baseline.md."""
import torch


def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)


model = f
example_inputs = (torch.randn(4096, 4096),)
