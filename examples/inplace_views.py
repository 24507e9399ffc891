"""In-place ops and views: AOTAutograd's functionalization rewrites them into pure ops."""
import torch


def f(x, buf):
    y = x.clone()
    y.add_(1)  # in-place on a local
    y[:, 0].mul_(2)  # in-place through a view
    buf.copy_(y.t())  # mutates an input: becomes a copy back into it
    return y.relu_()


model = f
example_inputs = (torch.randn(32, 32), torch.zeros(32, 32))
