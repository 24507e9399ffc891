# Attack: files deleted but kept open still take disk space, invisible to a walk of the folder.
import os
import time

held = []
for i in range(8):
    f = open(f"hidden-{i}", "wb")
    os.unlink(f.name)
    held.append(f)
    for _ in range(8):
        f.write(b"x" * (1 << 20))  # 8 MiB per file, 64 MiB in all: twice the output limit of the test
        f.flush()
time.sleep(60)
