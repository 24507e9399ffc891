# A fork bomb in a file the web tier accepts (it defines a model): the eager run forks without end. For
# bench/concurrent_submissions.py --code: how the site's pages fare while the job is ended, and that the next job
# succeeds.
import os

import torch


def f(x):
    while True:
        os.fork()


model = f
example_inputs = (torch.ones(2),)
