"""Which PACKET_IN path runs: the compiled one (``emulator/_fastpath.c``) or pure Python.

The project's install (``pip install -e .``, tox) builds ``emulator._fastpath`` from ``emulator/_fastpath.c`` with the
machine's C compiler; the build is optional, so without a compiler the install still succeeds and the pure-Python
path runs.  ``BMWG_PURE_PYTHON=1`` chooses the pure-Python path even when the compiled one is there.  Both do the
same work, message for message (tests/test_fastpath.py runs the same checks over both); the compiled one does it
over whole receive buffers:

* ``match``: a traffic switch's answers (PACKET_OUT, buffered FLOW_MOD) matched to its requests and booked;
* ``packet_outs``: the null controller's PACKET_OUT for each buffered PACKET_IN;
* ``fill``: the PACKET_INs of consecutive requests copied from a switch's templates.

:data:`IMPL` names the path (``compiled`` or ``python``); a §5.1.3 ceiling, ``selfbench async`` and the report say
which ran.  When the compiled module was wanted but could not be loaded, :data:`WHY_PYTHON` says why.
"""

from __future__ import annotations

import os
from typing import Optional

ENV = "BMWG_PURE_PYTHON"
WHY_PYTHON: Optional[str] = None

if os.environ.get(ENV, "").strip() not in ("", "0"):
    native = None
    WHY_PYTHON = f"{ENV} is set"
else:
    try:
        from . import _fastpath as native  # type: ignore[attr-defined]
    except ImportError as exc:   # no compiler at install time, or a stale build
        native = None
        WHY_PYTHON = f"emulator._fastpath is not built ({exc}); reinstall with a C compiler (pip install -e .)"

IMPL = "compiled" if native is not None else "python"

# The layout of match()'s ctx array (emulator/_fastpath.c): read-only inputs, then counters it adds to.
(T, T_END, TIMEOUT, T_START, DURATION, MASK, NONCE, PO_HEAD, PO_ALEN_AT, FM_BID_AT, COUNT_PO, COUNT_FM, VERSION,
 MAX_LEN, NRX, NRX_IN_TD, LATE, DUPLICATES, STALE, OPENED, NOT_COUNTED, RTT_SUM, PO, FM, UNMATCHED, ANSWERED,
 CTX_LEN) = range(27)
COUNTERS = slice(NRX, CTX_LEN)

if native is not None and native.CTX_LEN != CTX_LEN:   # a build from another version of the C file
    native, IMPL = None, "python"
    WHY_PYTHON = "emulator._fastpath was built from another version of _fastpath.c; reinstall (pip install -e .)"


def label() -> str:
    """The path that runs, as the run record names it: ``compiled``, or ``python`` and why."""
    return IMPL + (f" ({WHY_PYTHON})" if WHY_PYTHON else "")
