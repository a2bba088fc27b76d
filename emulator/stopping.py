"""A stop the run was asked for (Ctrl-C, SIGTERM, SIGHUP), seen by every long wait on either side.

Pure: standard library only.  The harness's signal handler sets :attr:`StopRequest.reason` and raises
:class:`Interrupted`; the waits that may swallow that raise (a shard's answer, the next trial, the next kind of the
screen) call :meth:`StopRequest.check`.
"""

from __future__ import annotations

from typing import Optional


class Interrupted(KeyboardInterrupt):
    """The run was asked to stop (Ctrl-C, SIGTERM, SIGHUP); ``reason`` says which."""

    def __init__(self, reason: str = "interrupted by the user (Ctrl-C)"):
        super().__init__(reason)
        self.reason = reason


class StopRequest:
    """A stop the run was asked for.  The signal handler raises :class:`Interrupted` once, but an exception
    raised in a handler can be swallowed (when it lands in a finaliser), so the long waits (a shard's answer, the
    next trial) look here too and raise it again."""
    reason: Optional[str] = None

    @classmethod
    def check(cls) -> None:
        if cls.reason is not None:
            raise Interrupted(cls.reason)
