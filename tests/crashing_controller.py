"""A controller that crashes once, for the integration tests of an external controller's lifecycle:

    python tests/crashing_controller.py COUNTER START SESSIONS PORT -- COMMAND...

Each run adds one to the number in the file COUNTER (the starts so far).  On start number START it runs COMMAND
as its child and kills it with SIGKILL as soon as COMMAND holds SESSIONS OpenFlow sessions on PORT at once (the
suite's readiness probe holds one: only a trial's switches make SESSIONS), then dies by SIGKILL itself, as a
crashed controller would.  On every other start it becomes COMMAND (exec)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil


def sessions(proc: psutil.Process, port: int) -> int:
    try:
        return sum(1 for c in proc.net_connections(kind="tcp")
                   if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port)
    except psutil.Error:
        return 0


def main(argv: list) -> None:
    counter, start, want, port = Path(argv[0]), int(argv[1]), int(argv[2]), int(argv[3])
    command = argv[argv.index("--") + 1:]
    n = (int(counter.read_text()) if counter.exists() else 0) + 1
    counter.write_text(str(n))
    if n != start:
        os.execvp(command[0], command)
    child = subprocess.Popen(command)
    proc = psutil.Process(child.pid)
    while child.poll() is None:
        if sessions(proc, port) >= want:
            print(f"crashing_controller: {want} sessions held: killing pid {child.pid}", flush=True)
            child.kill()
            child.wait()
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.01)   # polling another process; not a measurement
    sys.exit(child.returncode)


if __name__ == "__main__":
    main(sys.argv[1:])
