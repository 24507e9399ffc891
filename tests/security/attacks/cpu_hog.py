# Attack: eight processes spinning at once for 12 s, each in a session of its own (the kernel's autogroup would
# otherwise weigh the job's one session as one). Together they must weigh less in the CPU scheduler than one
# process outside the job (the web server, the worker), so that the site stays responsive while a job hogs.
import os
import time


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


children = []
for _ in range(7):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        spin(12)
        os._exit(0)
    children.append(pid)
spin(12)
for pid in children:
    os.waitpid(pid, 0)
