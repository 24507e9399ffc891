# Attack: change what the worker's trusted kernel cache serves. Every trusted binary bound into this job's cache
# folders is written, truncated, deleted, renamed over, chmodded and hard-linked; its store path (read from the
# mount table) is opened for writing; then its folder is moved aside and a forgery planted where it was (the job's
# own folder: that much it may do, for itself alone).
import json
import os

import torch


def outcome(action, *args):
    try:
        action(*args)
        return "done"
    except OSError as exc:
        return exc.strerror


def write(path, mode="r+b"):
    with open(path, mode) as f:
        f.write(b"poison")


def replace(path):
    write(path + ".new", "wb")
    os.replace(path + ".new", path)


mounts = {}
with open("/proc/self/mountinfo") as f:
    for line in f:
        fields = line.split()
        mounts[fields[4]] = fields[3]  # mount point -> the path of its source in its file system
found, trusted = {}, []
for variable in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
    for folder, _, files in os.walk(os.environ[variable]):
        trusted += [os.path.join(folder, n) for n in files if os.statvfs(os.path.join(folder, n)).f_flag & os.ST_RDONLY]
for path in trusted:
    found[f"{path} write"] = outcome(write, path)
    found[f"{path} truncate"] = outcome(open, path, "wb")
    found[f"{path} delete"] = outcome(os.remove, path)
    found[f"{path} replace"] = outcome(replace, path)
    found[f"{path} chmod"] = outcome(os.chmod, path, 0o777)
    found[f"{path} link"] = outcome(os.link, path, path + ".link")
    found[f"{path} store path"] = outcome(write, mounts.get(path, "/nonexistent"))
for path in trusted:
    folder = os.path.dirname(path)
    found[f"{path} move folder"] = outcome(os.rename, folder, folder + ".aside")
    if found[f"{path} move folder"] == "done":
        os.makedirs(folder, exist_ok=True)
        write(path, "wb")  # a forgery, in this job's own folder
print("FOUND" + json.dumps({"trusted": len(trusted), "results": found}))
model = lambda x: x.sin()
example_inputs = (torch.ones(2),)
