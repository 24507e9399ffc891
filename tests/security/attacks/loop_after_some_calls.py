# An endless loop the twentieth call reaches (past the eager run's calls, within the benchmark's): it must end at the
# stall limit, naming this line, not hold the worker until the job's time limit.
import torch

calls = []


@torch.compiler.disable
def f(x):
    calls.append(1)
    while len(calls) > 20:
        pass
    return x + 1


model = f
example_inputs = (torch.ones(2),)
