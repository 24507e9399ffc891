# An endless loop in the user's own backend, which Dynamo calls at compile time: it must end at the stall limit,
# naming this line.
import torch


def stuck(gm, example_inputs):
    while True:
        pass


def f(x):
    return x + 1


model = f
example_inputs = (torch.ones(2),)
backend = stuck
