# Attack: a fork bomb too slow for the rate check and too small for the kernel to refuse: ten copies a second, each
# of which waits, up to 40 (the tests' process limit is 64). A bomb starved of CPU behaves so (in the embedded
# service beside a busy web tier one held about 370 of 512 processes, forking under 25 a second, and ran to the
# time limit). It must end as `processes` once it has held half of its limit for the hold time.
import os
import time

copies = 0
while True:
    if copies < 40:
        if os.fork() == 0:
            while True:
                time.sleep(1)
        copies += 1
    time.sleep(0.1)
