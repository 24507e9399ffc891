# An endless loop that only torch.compile reaches: the eager run returns, then Dynamo traces the loop for ever (no
# line of the user's is on the stack: Dynamo interprets it). It must end at the stall limit, not the job's.
import torch


def f(x):
    if torch.compiler.is_compiling():
        while True:
            pass
    return x + 1


model = f
example_inputs = (torch.ones(2),)
