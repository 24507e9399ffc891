# Attack: one fallocate asks for three times the output limit at once, faster than any poll.
import os

fd = os.open("burst", os.O_WRONLY | os.O_CREAT)
os.posix_fallocate(fd, 0, 96 << 20)
