"""The sandbox's system-call filter (``grader.run.seccomp``), in a real sandbox: each refused
call fails with EPERM where, without the filter, the same call gets another answer from the
kernel; a call of another ABI (32-bit ``int 0x80``, x32) kills the process; what a grading
kernel does (NumPy, torch, fork, threads, subprocesses) still works. The filter's cost on
grading is measured in ``make bench`` (``bench/p8_seccomp.py``)."""

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import pytest

from grader.run import sandbox, seccomp

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or platform.machine() not in seccomp.ARCHES,
    reason="needs bubblewrap on x86_64 or aarch64",
)
NUMBERS = seccomp.ARCHES.get(platform.machine(), (0, False, {}))[2]
# Each refused call with every argument -1: invalid everywhere, so nothing happens unfiltered.
PROBE = f"""
import ctypes, errno, json, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def answer(nr, *args):
    ctypes.set_errno(0)
    got = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "ok" if got >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
seen = {{name: answer(nr, *[-1] * 6) for name, nr in {NUMBERS!r}.items()
        if name in {seccomp.REFUSED!r}}}
seen["clone_new_user"] = answer({NUMBERS.get("clone", 0)}, 0x10000000 | 17, 0, 0, 0, 0)
seen["clone3"] = answer({NUMBERS.get("clone3", 0)}, 0, 0)  # a null clone_args: EFAULT unfiltered
seen["Seccomp"] = next(l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:"))
pid = os.fork()
if pid == 0:
    os._exit(7)
seen["fork"] = os.waitpid(pid, 0)[1] >> 8
box = []
worker = threading.Thread(target=lambda: box.append(sum(range(10))))
worker.start(); worker.join()
seen["thread"] = box[0]
seen["subprocess"] = subprocess.run(["true"]).returncode
import numpy, torch
seen["numpy"] = float(numpy.linalg.inv(numpy.eye(3) * 2)[0, 0])
seen["torch"] = float(torch.softmax(torch.zeros(4), dim=0)[0])
print(json.dumps(seen))
"""
# A call of the 32-bit ABI (getpid as int 0x80) from machine code, and an x32 call.
I386 = """
import ctypes, mmap
code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])  # mov eax, 20; int 0x80; ret
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
address = ctypes.addressof(ctypes.c_char.from_buffer(page))
ctypes.CFUNCTYPE(ctypes.c_int)(address)()
print("survived")
"""
X32 = "import ctypes; ctypes.CDLL(None).syscall(0x40000000 + 39); print('survived')"


def _sandboxed(script: str, with_filter: bool) -> subprocess.CompletedProcess:
    """``script`` in the grader's sandbox (as a sandbox uid when root), filtered or not."""
    with tempfile.TemporaryDirectory() as ipc, tempfile.TemporaryDirectory() as private:
        os.chmod(ipc, 0o777)  # the sandbox's uid binds it
        args = sandbox.command(
            [sys.executable, "-c", script], scratch="/home/student", ipc=ipc, files={},
            folders=[], uid=61999 if os.geteuid() == 0 else None, scratch_mb=64,
            seccomp=seccomp.write(private) if with_filter else None,
        )  # fmt: skip
        return subprocess.run(args, capture_output=True, text=True, timeout=180)


def test_the_filter_refuses_what_a_kernel_never_needs_and_keeps_the_rest():
    filtered, bare = (_sandboxed(PROBE, f) for f in (True, False))
    assert filtered.returncode == 0 and bare.returncode == 0, filtered.stderr + bare.stderr
    seen, unfiltered = json.loads(filtered.stdout), json.loads(bare.stdout)
    refused = [n for n in seccomp.REFUSED if n in NUMBERS] + ["clone_new_user"]
    assert {n: seen[n] for n in refused} == dict.fromkeys(refused, "EPERM")
    assert seen["Seccomp"] == "2" and unfiltered["Seccomp"] == "0"
    # clone3 hides its flags from the filter: ENOSYS, so the C library falls back to clone
    assert seen["clone3"] == "ENOSYS" and unfiltered["clone3"] != "ENOSYS", unfiltered
    # Without it the kernel answers otherwise (EINVAL, EFAULT, EBADF...): the filter said no.
    answered = [n for n in refused if unfiltered[n] != "EPERM"]
    assert len(answered) >= 20, unfiltered
    for key in ("fork", "thread", "subprocess", "numpy", "torch"):
        assert seen[key] == unfiltered[key], key
    assert (seen["fork"], seen["thread"], seen["numpy"], seen["torch"]) == (7, 45, 0.5, 0.25)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x86-64 ABIs")
@pytest.mark.parametrize("script", [I386, X32], ids=["i386", "x32"])
def test_a_call_of_another_abi_kills_the_process(script):
    """The architecture check comes first: the 32-bit ABI's numbers mean other calls."""
    filtered, bare = (_sandboxed(script, f) for f in (True, False))
    assert "survived" not in filtered.stdout and filtered.returncode != 0, filtered
    assert "Bad system call" in filtered.stderr or filtered.returncode in (-31, 159), filtered
    assert bare.returncode == 0 or "survived" in bare.stdout or script is I386, bare


def test_the_program_checks_the_architecture_before_any_number():
    """Offline: the first two instructions load the ABI and jump to the kill for another."""
    for machine, (arch, _x32, _numbers) in seccomp.ARCHES.items():
        ops = seccomp.program(machine)
        assert len(ops) % 8 == 0 and len(ops) // 8 < 256
        code, jt, jf, k = __import__("struct").unpack("=HBBI", ops[8:16])
        assert (code, k, jt) == (seccomp.JEQ, arch, 0)
        assert ops[8 * (2 + jf) :][:8][-4:] == seccomp.KILL_PROCESS.to_bytes(4, "little")
    with pytest.raises(seccomp.Unsupported):
        seccomp.program("sparc")
