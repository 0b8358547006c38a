"""The system-call filter of every sandbox: a classic BPF program for bubblewrap's
``--seccomp FD``, assembled here (no library: bwrap takes the compiled program).

A kernel runs Python, NumPy and torch: it never needs to trace another process, mount or
pivot a file system, make or join namespaces, load kernel modules or BPF programs, use the
kernel's keyrings, userfaultfd, perf events, io_uring, swap, reboot, kexec or the clock.
Those calls fail with EPERM (the student sees a PermissionError, nothing crashes);
``clone3`` fails with ENOSYS, as Docker's default profile does, so the C library falls back
to ``clone``, whose namespace flags the filter can see (``clone3`` hides them in memory). A
call from another ABI than the host's (32-bit ``int 0x80`` on x86-64, the x32 ABI) kills the
process: its numbers mean other calls, which the list above does not name.
"""

import os
import platform
import struct

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (linux/seccomp.h)
NR, ARCH, ARG0_LOW = 0, 4, 16  # little-endian: the low half of args[0] first
LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|..., BPF_RET|K
ALLOW, KILL_PROCESS, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000  # SECCOMP_RET_*
X32_BIT = 0x40000000  # __X32_SYSCALL_BIT
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (linux/sched.h)
NEW_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
NEW_NAMESPACES |= 0x40000000

REFUSED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",  # other processes' memory
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "mount_setattr", "open_by_handle_at", "name_to_handle_at",
    "unshare", "setns",  # namespaces (clone's flags: below)
    "keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "fanotify_init",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup",
    "lookup_dcookie", "nfsservctl", "sethostname", "setdomainname",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "iopl", "ioperm", "uselib", "_sysctl", "create_module", "get_kernel_syms", "query_module",
)  # fmt: skip

# (AUDIT_ARCH_*, the x32 bit applies, {name: number}) from the kernel's headers:
# arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h.
X86_64 = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428,
    "mount_setattr": 442, "open_by_handle_at": 304, "name_to_handle_at": 303,
    "unshare": 272, "setns": 308, "keyctl": 250, "add_key": 248, "request_key": 249,
    "bpf": 321, "userfaultfd": 323, "perf_event_open": 298, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "fanotify_init": 300,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163,
    "quotactl": 179, "quotactl_fd": 443, "syslog": 103, "vhangup": 153,
    "lookup_dcookie": 212, "nfsservctl": 180, "sethostname": 170, "setdomainname": 171,
    "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
    "iopl": 172, "ioperm": 173, "uselib": 134, "_sysctl": 156, "create_module": 174,
    "get_kernel_syms": 177, "query_module": 178, "clone": 56, "clone3": 435,
}  # fmt: skip
AARCH64 = {
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
    "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428,
    "mount_setattr": 442, "open_by_handle_at": 265, "name_to_handle_at": 264,
    "unshare": 97, "setns": 268, "keyctl": 219, "add_key": 217, "request_key": 218,
    "bpf": 280, "userfaultfd": 282, "perf_event_open": 241, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "fanotify_init": 262,
    "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
    "delete_module": 106, "swapon": 224, "swapoff": 225, "reboot": 142, "acct": 89,
    "quotactl": 60, "quotactl_fd": 443, "syslog": 116, "vhangup": 58,
    "lookup_dcookie": 18, "nfsservctl": 42, "sethostname": 161, "setdomainname": 162,
    "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
    "clone": 220, "clone3": 435,
}  # fmt: skip
ARCHES = {"x86_64": (0xC000003E, True, X86_64), "aarch64": (0xC00000B7, False, AARCH64)}


class Unsupported(Exception):
    """No filter is written for this machine's architecture."""


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)  # struct sock_filter


def program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one), as bwrap reads it."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise Unsupported(f"no system-call filter for {machine} (only {', '.join(ARCHES)})")
    arch, x32, numbers = ARCHES[machine]
    refused = [numbers[name] for name in REFUSED if name in numbers]
    # Layout: checks, then the returns they jump to (offsets count from the next op); each
    # check is (code, k, the label it jumps to when true, or "").
    body: list[tuple[int, int, str]] = [(LD_ABS, NR, "")]
    if x32:
        body.append((JGE, X32_BIT, "kill"))
    body += [(JEQ, nr, "deny") for nr in refused]
    body += [(JEQ, numbers["clone3"], "enosys"), (JEQ, numbers["clone"], "clone"), (RET, ALLOW, "")]
    body += [(LD_ABS, ARG0_LOW, ""), (JSET, NEW_NAMESPACES, "deny"), (RET, ALLOW, "")]
    labels = {"clone": len(body) - 3, "deny": len(body), "enosys": len(body) + 1}
    labels["kill"] = len(body) + 2
    ops = [_op(LD_ABS, ARCH), _op(JEQ, arch, 0, labels["kill"])]  # else: kill
    ops += [_op(code, k, labels[label] - at - 1 if label else 0)
            for at, (code, k, label) in enumerate(body)]  # fmt: skip
    ops += [_op(RET, ERRNO | 1), _op(RET, ERRNO | 38), _op(RET, KILL_PROCESS)]  # EPERM, ENOSYS
    return b"".join(ops)


def write(folder: str) -> str:
    """The filter in a file of ``folder`` (readable by all: it holds nothing private)."""
    path = os.path.join(folder, "seccomp.bpf")
    with open(path, "wb") as fh:
        fh.write(program())
    os.chmod(path, 0o644)
    return path
