# Attack: each process stays under the per-process memory limit, the job as a whole does not (8 x 600 MiB on top
# of the torch they share, against 4096 MiB).
import os
import time

children = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        block = bytearray(600 << 20)  # zero-filled: every page is touched
        time.sleep(20)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
