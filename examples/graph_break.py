"""Two graph breaks: print() and Tensor.item() each end the graph Dynamo is building."""
import torch


def f(x):
    y = torch.relu(x) * 2
    print("halfway")  # graph break: print has side effects Dynamo cannot trace
    scale = y.sum().item()  # graph break: a Python number out of a tensor (data-dependent)
    return y / (scale + 1.0)


model = f
example_inputs = (torch.randn(64, 64),)
