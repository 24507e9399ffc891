# Attack: a fork bomb. The job's own process fails at the process limit and reports; its copies keep forking
# (bubblewrap's init lives while any of them does): the parent must end them as soon as the job's process ended.
import os

while True:
    os.fork()
