# A model whose forward never returns: the eager run (the first call of the user's model) must end at the
# user-code limit, naming the loop's line.
import torch


def f(x):
    while True:
        x = x + 0


model = f
example_inputs = (torch.ones(2),)
