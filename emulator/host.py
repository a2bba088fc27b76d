"""Where things run, as both sides of the emulator see it: this host's boot (shards with the harness's boot id
share its CLOCK_MONOTONIC) and whether an address is this host's loopback.

Pure: standard library only (the harness's pool and the reactor-side shards import it).
"""

from __future__ import annotations

import ipaddress
import platform


def boot_id() -> str:
    """This boot of this host: the kernel's random boot id, or the host name when there is none."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return f"{platform.node()}-unknown"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
