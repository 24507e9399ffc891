"""A seccomp filter for jobs, built as classic BPF in pure Python and handed to bubblewrap (``--seccomp FD``).

It closes kernel attack surface torch.compile never needs: new namespaces (a user namespace would give the job
every capability inside it, and with them mount, raw sockets and more), mounting, kernel keyrings, BPF, perf
events, userfaultfd, io_uring, ptrace and the other process's memory, module loading, reboot and swap. Those calls
fail with EPERM; clone3 fails with ENOSYS (its flags sit behind a pointer a filter cannot read, and glibc then
falls back to clone, whose namespace flags the filter does check). Any other ABI (x32, 32-bit) is refused
outright. Filters exist for x86_64 and aarch64; elsewhere ``program()`` returns None and the report says so.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

# Classic BPF opcodes (linux/filter.h, linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
LD_W_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
# Offsets in struct seccomp_data: nr (int), arch (u32), instruction pointer (u64), args[6] (u64 each).
NR, ARCH, ARG0_LOW = 0, 4, 16
CLONE_NAMESPACES = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080
)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME

DENIED = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
    "syslog",
)
# (audit arch, syscall numbers, a bit set in every foreign-ABI syscall number or None)
ARCHES = {
    "x86_64": (
        0xC000003E,
        0x40000000,
        {
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "reboot": 169,
            "swapon": 167,
            "swapoff": 168,
            "acct": 163,
            "quotactl": 179,
            "open_by_handle_at": 304,
            "name_to_handle_at": 303,
            "syslog": 103,
            "clone": 56,
            "clone3": 435,
        },
    ),
    "aarch64": (
        0xC00000B7,
        None,
        {
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "reboot": 142,
            "swapon": 224,
            "swapoff": 225,
            "acct": 89,
            "quotactl": 60,
            "open_by_handle_at": 265,
            "name_to_handle_at": 264,
            "syslog": 116,
            "clone": 220,
            "clone3": 435,
        },
    ),
}


def program(machine: str | None = None) -> bytes | None:
    """The filter as an array of struct sock_filter, for this machine's architecture (None: no filter here)."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, foreign_bit, numbers = arch
    # (opcode, jump-if-true label, jump-if-false label, k): labels resolve to the return instructions at the end.
    code: list[tuple] = [(LD_W_ABS, None, None, ARCH), (JEQ, None, "kill", audit_arch), (LD_W_ABS, None, None, NR)]
    if foreign_bit is not None:
        code.append((JGE, "kill", None, foreign_bit))
    code += [(JEQ, "deny", None, numbers[name]) for name in DENIED]
    code += [
        (JEQ, "nosys", None, numbers["clone3"]),
        (JEQ, None, "allow", numbers["clone"]),
        (LD_W_ABS, None, None, ARG0_LOW),
        (JSET, "deny", "allow", CLONE_NAMESPACES),
    ]
    returns = {
        "allow": RET_ALLOW,
        "deny": RET_ERRNO | errno.EPERM,
        "nosys": RET_ERRNO | errno.ENOSYS,
        "kill": RET_KILL_PROCESS,
    }
    at = {label: len(code) + i for i, label in enumerate(returns)}
    out = b""
    for index, (opcode, if_true, if_false, k) in enumerate(code):
        jt = at[if_true] - index - 1 if if_true else 0
        jf = at[if_false] - index - 1 if if_false else 0
        out += struct.pack("<HBBI", opcode, jt, jf, k)
    for value in returns.values():
        out += struct.pack("<HBBI", RET, 0, 0, value)
    return out


def filter_fd() -> int | None:
    """A readable descriptor holding the filter (what ``bwrap --seccomp FD`` reads), or None on other arches.
    The caller passes it to the child and closes it."""
    code = program()
    if code is None:
        return None
    fd = os.memfd_create("pt2scope-seccomp")
    os.write(fd, code)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
