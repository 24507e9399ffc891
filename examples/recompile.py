"""Called with two shapes: the second call fails a size guard and Dynamo recompiles."""
import torch


def f(x):
    return torch.nn.functional.softmax(x * 2, dim=-1)


model = f
# A list of argument tuples: called in turn.
example_inputs = [(torch.randn(4, 16),), (torch.randn(6, 16),)]
