"""``python -m grader.run.remount PID PATH``: make ``PATH`` read-only in the mount namespace of
``PID`` (a sandbox's), entering the user namespace that owns it: this user's own, made by the
unprivileged ``bwrap``, so no privilege is needed. A process of its own, as only a
single-threaded process may enter a user namespace, and a small one (it runs at every kernel
start of an unprivileged sandbox: ``grader.run.sandbox.seal``).
"""

import ctypes
import fcntl
import os
import sys

NS_GET_USERNS, CLONE_NEWUSER, CLONE_NEWNS = 0xB701, 0x10000000, 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
MS_KEPT = 2 | 4 | 8  # nosuid, nodev, noexec: a remount must keep them (statvfs's bits match)


def remount_read_only(pid: int, path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    mounts = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
    owner = fcntl.ioctl(mounts, NS_GET_USERNS)
    for fd, kind in ((owner, CLONE_NEWUSER), (mounts, CLONE_NEWNS)):
        if libc.setns(fd, kind) != 0:
            raise OSError(ctypes.get_errno(), "setns")
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | (os.statvfs(path).f_flag & MS_KEPT)
    if libc.mount(None, path.encode(), None, flags, None) != 0:
        raise OSError(ctypes.get_errno(), f"remount {path}")


if __name__ == "__main__":
    remount_read_only(int(sys.argv[1]), sys.argv[2])
