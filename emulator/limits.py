"""Process limits and self-measurement: open-file limit, resident memory, dying with the parent."""

from __future__ import annotations

import os
import resource
import signal
import sys

FD_RESERVE = 200        # files an emulator shard keeps for itself besides its sessions
PR_SET_PDEATHSIG = 1
_LIBC = None


def load_libc():
    """libc, loaded once, before any fork (a forked child must not load libraries)."""
    global _LIBC
    if _LIBC is None and sys.platform.startswith("linux"):
        import ctypes
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def die_with_parent(parent: int | None) -> None:
    """Ask the kernel for SIGKILL when this process's parent dies (Linux ``PR_SET_PDEATHSIG``, kept across
    exec); leave at once if ``parent`` (the pid that started it) is gone already.  Safe between fork and exec
    when :func:`load_libc` ran in the parent."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def signal_when_parent_dies(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent exits (``PR_SET_PDEATHSIG``); True if
    asked.  A parent that is gone already (this process adopted) gets the signal sent at once."""
    libc = load_libc()
    if libc is None or libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        return False
    if os.getppid() == 1:
        os.kill(os.getpid(), sig)
    return True


_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes(pid: str | int = "self") -> int | None:
    """Resident memory of a process, from /proc (None where /proc is not there)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return None


class FdLimitError(RuntimeError):
    """The open-file limit is below what was asked and cannot be raised."""


def raise_nofile(needed: int) -> int:
    """Raise RLIMIT_NOFILE to at least ``needed`` (the hard limit too, when allowed).

    Returns the soft limit now in force.  Raises :class:`FdLimitError`, with the
    numbers, when the limit cannot reach ``needed``.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return soft
    if hard != resource.RLIM_INFINITY and hard < needed:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, needed))
            return needed
        except (ValueError, OSError) as exc:
            raise FdLimitError(
                f"need {needed} open files but RLIMIT_NOFILE is {soft} (hard {hard}) and raising the hard "
                f"limit failed ({exc}); run as root or raise 'ulimit -Hn' to at least {needed}") from None
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return needed


def nr_open() -> int:
    """The kernel's ceiling for RLIMIT_NOFILE."""
    try:
        with open("/proc/sys/fs/nr_open") as f:
            return int(f.read())
    except (OSError, ValueError):
        return resource.getrlimit(resource.RLIMIT_NOFILE)[1]
