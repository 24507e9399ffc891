# Attack: a user namespace (every capability inside it), a mount, keyrings, bpf: each must be refused.
import ctypes
import json
import os
import subprocess

import torch

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17


def errno_of(result):
    return "allowed" if result >= 0 else os.strerror(ctypes.get_errno())


found = {
    "unshare_user": errno_of(libc.unshare(CLONE_NEWUSER)),
    "unshare_mount": errno_of(libc.unshare(CLONE_NEWNS)),
    "mount_tmpfs": errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
    "keyctl": errno_of(libc.syscall(250, 0, 0, 0, 0, 0)),  # keyctl(KEYCTL_GET_KEYRING_ID) on x86_64
    "unshare_binary": subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True).returncode,
    "dev_shm": open("/dev/shm/mine", "w").write("shared memory is writable"),
}
print("FOUND" + json.dumps(found))
model = lambda x: x.sin()
example_inputs = (torch.ones(2),)
