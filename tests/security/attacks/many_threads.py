# The job after an attack: it needs threads (as torch's pools do); it must not be starved by an earlier job.
import os
import threading

import torch

barrier = threading.Barrier(41)
threads = [threading.Thread(target=barrier.wait) for _ in range(40)]
for thread in threads:
    thread.start()
barrier.wait()
print("UID", os.getuid())
model = lambda x: x.sin()
example_inputs = (torch.ones(2),)
