# Not an attack, a truthful failure: the job ends itself with exit code 3 (not "memory").
import os

os._exit(3)
