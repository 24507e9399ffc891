# The time limit: the failure names the line the job was on when it was killed.
import time


def wait_forever():
    while True:
        time.sleep(0.1)


wait_forever()
