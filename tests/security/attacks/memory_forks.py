# Attack: each process stays under the per-process memory limit, the job as a whole does not (10 x 450 MiB on top
# of the torch they share, against 4096 MiB; each process's address space is already about 3.4 GiB of that limit
# with torch, Dynamo and Inductor imported, as the child imports them before the user's code).
import os
import time

children = []
for _ in range(10):
    pid = os.fork()
    if pid == 0:
        block = bytearray(450 << 20)  # zero-filled: every page is touched
        time.sleep(20)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
