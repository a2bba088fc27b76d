"""Process limits and self-measurement: open-file limit, resident memory."""

from __future__ import annotations

import os
import resource

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
