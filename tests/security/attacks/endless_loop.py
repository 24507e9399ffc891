# Attack (or a student's mistake): an endless loop at the top of the file, in pure Python. It must end at the
# user-code limit, naming this line, not hold the worker until the job's time limit.
x = 0
while True:
    x += 1
