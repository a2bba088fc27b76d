"""A throw-away OpenSSH server on 127.0.0.1 for tests that run emulator shards over ssh.

``local_sshd(tmp_path)`` is a context manager: it finds ``sshd`` (Debian: ``apt-get install
openssh-server``), makes a host key and a client key with ``ssh-keygen`` in ``tmp_path``, writes an
``sshd_config`` that listens only on 127.0.0.1 at a free port and accepts only that client key,
starts ``sshd -D -e`` in its own process group, waits until ``ssh ... true`` works, and yields a
``LocalSshd``. On exit it kills the server's process group and the per-connection processes it
forked (each of those is in a session of its own), by PID only. Nothing under ``~/.ssh`` or
``/etc/ssh`` is read or written: the client uses its own ``ssh_config`` (``ssh -F``) and sends no
known-hosts entries anywhere.

Where sshd is missing or will not start, the test is skipped with the reason (the stderr sshd
printed). With ``BMWG_REQUIRE_SSHD=1`` in the environment it fails instead, so a CI run that means to
exercise ssh cannot pass by skipping.

    with local_sshd(tmp_path) as srv:
        gw = execnet.makegateway(srv.gateway_spec(python=sys.executable, chdir="/tmp/x"))

Import it from a test module as ``from sshd import local_sshd`` (pytest puts ``tests/`` on sys.path;
``tests.sshd`` would find the unrelated ``tests`` package that tinyrpc installs into site-packages).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

START_TIMEOUT = 10.0        # s for sshd to accept TCP and then a login
INSTALL_HINT = "apt-get install openssh-server"
_ADDRESS_IN_USE = "Address already in use"


def _give_up(reason: str):
    if os.environ.get("BMWG_REQUIRE_SSHD"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def find_sshd() -> str | None:
    """Absolute, resolved path of sshd (it re-executes itself and refuses a relative path)."""
    found = shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if os.access(p, os.X_OK)), None)
    return os.path.realpath(found) if found else None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _keygen(ssh_keygen: str, path: Path, comment: str) -> None:
    for old in (path, Path(f"{path}.pub")):  # ssh-keygen would ask before overwriting
        old.unlink(missing_ok=True)
    subprocess.run([ssh_keygen, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)


@dataclass
class LocalSshd:
    host: str
    port: int
    user: str
    key: Path              # the client's private key
    ssh_config: Path       # client config: port, user, key, no known-hosts, batch mode
    log: Path              # sshd's stderr (-e)
    pid: int

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.host}"

    @property
    def ssh_options(self) -> list:
        """Options for a plain ``ssh`` command line (equivalent to the ``ssh_config`` file)."""
        return ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
                "-o", "LogLevel=ERROR", "-o", "IdentitiesOnly=yes", "-i", str(self.key), "-p", str(self.port)]

    def ssh_command(self, *remote: str) -> list:
        return ["ssh", *self.ssh_options, self.destination, *remote]

    def gateway_spec(self, python: str | None = None, chdir: str | None = None, inline: bool = False,
                     **extra: str) -> str:
        """execnet spec for a gateway through this server.

        Default: ``ssh_config=CFG//ssh=USER@127.0.0.1`` — execnet runs ``ssh -C -F CFG USER@127.0.0.1
        'PYTHON -c "..."'``, so the ``ssh=`` value stays a bare destination as in ``--emulator-hosts``.
        ``inline=True``: the options go into the ``ssh=`` value itself (execnet splits it on
        whitespace into ssh arguments), no config file. Neither form allows ``//`` or whitespace
        inside a path, nor whitespace in ``python``.
        """
        parts = [f"ssh={' '.join(self.ssh_options)} {self.destination}"] if inline else \
            [f"ssh_config={self.ssh_config}", f"ssh={self.destination}"]
        if python:
            parts.append(f"python={python}")
        if chdir:
            parts.append(f"chdir={chdir}")
        parts += [f"{k}={v}" for k, v in extra.items()]
        spec = "//".join(parts)
        if any(p.count("//") for p in (python or "", chdir or "", str(self.key), str(self.ssh_config))):
            raise ValueError(f"execnet specs cannot hold '//' inside a value: {spec!r}")
        return spec


def _write_configs(tmp: Path, port: int, user: str, host_key: Path, client_key: Path) -> tuple:
    authorized = tmp / "authorized_keys"
    authorized.write_text(Path(f"{client_key}.pub").read_text())
    authorized.chmod(0o600)
    server_cfg = tmp / "sshd_config"
    server_cfg.write_text("\n".join([
        f"ListenAddress 127.0.0.1:{port}",
        f"HostKey {host_key}",
        f"PidFile {tmp / 'sshd.pid'}",
        f"AuthorizedKeysFile {authorized}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        f"AllowUsers {user}",
        "X11Forwarding no",
        "PrintMotd no",
        "PrintLastLog no",
        "MaxStartups 64:30:128",   # many shards may log in at once
        "LogLevel INFO",
        "",
    ]))
    client_cfg = tmp / "ssh_config"
    client_cfg.write_text("\n".join([
        "Host *",
        f"    Port {port}",
        f"    User {user}",
        f"    IdentityFile {client_key}",
        "    IdentitiesOnly yes",
        "    StrictHostKeyChecking no",
        "    UserKnownHostsFile /dev/null",
        "    GlobalKnownHostsFile /dev/null",
        "    BatchMode yes",
        "    LogLevel ERROR",
        "    ConnectTimeout 10",
        "",
    ]))
    return server_cfg, client_cfg


def _descendants(pid: int) -> list:
    try:
        import psutil
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except Exception:  # psutil missing or sshd gone
        return []


def _stop(proc: subprocess.Popen) -> None:
    """End the per-connection processes sshd forked (each setsid()s itself out of sshd's process group,
    so a group kill misses them) by PID while sshd is still there to reap them, then sshd's process
    group; reap sshd."""
    pids = _descendants(proc.pid)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 3
    alive = [p for p in pids if _alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _alive(p)]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie reparented to us would look alive forever
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start(sshd: str, tmp: Path, user: str, host_key: Path, client_key: Path):
    """One attempt at a free port: (proc, port, client_cfg, log) or (None, reason)."""
    port = free_port()
    server_cfg, client_cfg = _write_configs(tmp, port, user, host_key, client_key)
    log = tmp / f"sshd-{port}.log"
    check = subprocess.run([sshd, "-t", "-f", str(server_cfg)], capture_output=True, text=True, timeout=30)
    if check.returncode != 0:
        return None, f"sshd rejected its test configuration: {(check.stderr or check.stdout).strip()}"
    with open(log, "wb") as errf:
        proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(server_cfg)], stdin=subprocess.DEVNULL,
                                stdout=errf, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    # waiting for another process to come up (not a measurement): poll its port for the banner
    while True:
        if proc.poll() is not None:
            return None, f"sshd exited with status {proc.returncode}: {log.read_text(errors='replace').strip()}"
        try:  # sshd's banner, not just any listener that took the port first
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as probe:
                if probe.recv(64).startswith(b"SSH-"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            _stop(proc)
            return None, (f"sshd did not listen on 127.0.0.1:{port} within {START_TIMEOUT:g} s: "
                          f"{log.read_text(errors='replace').strip()}")
        time.sleep(0.05)
    # and then for a real login
    srv = LocalSshd("127.0.0.1", port, user, client_key, client_cfg, log, proc.pid)
    last = None
    while True:
        try:
            last = subprocess.run(srv.ssh_command("true"), stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=max(1.0, deadline - time.monotonic()))
            if last.returncode == 0:
                return proc, srv
            last = last.stderr.strip()
        except subprocess.TimeoutExpired:
            last = "ssh true timed out"
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            return None, (f"ssh {srv.destination} -p {port} true failed ({last}); sshd said: "
                          f"{log.read_text(errors='replace').strip()}")
        time.sleep(0.1)


@contextlib.contextmanager
def local_sshd(tmp_path):
    """Run an sshd on 127.0.0.1 for the current user; yields a ``LocalSshd``; skips if it cannot."""
    sshd = find_sshd()
    if sshd is None:
        _give_up(f"sshd is not installed: {INSTALL_HINT}")
    ssh, ssh_keygen = shutil.which("ssh"), shutil.which("ssh-keygen")
    if not ssh or not ssh_keygen:
        _give_up("the ssh client is not installed: apt-get install openssh-client")
    tmp = Path(tmp_path) / "sshd"
    tmp.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        # privilege separation wants its (root-owned, empty) chroot directory; the package's
        # service unit normally makes it, and we never start that service
        with contextlib.suppress(FileExistsError):
            os.mkdir("/run/sshd", 0o755)
    user = pwd.getpwuid(os.geteuid()).pw_name
    host_key, client_key = tmp / "host_ed25519", tmp / "client_ed25519"
    _keygen(ssh_keygen, host_key, "bmwg-sdn test host")
    _keygen(ssh_keygen, client_key, "bmwg-sdn test client")
    for _ in range(3):  # the free port can be taken between our probe and sshd's bind
        proc, got = _start(sshd, tmp, user, host_key, client_key)
        if proc is not None or _ADDRESS_IN_USE not in got:
            break
    if proc is None:
        _give_up(got)
    try:
        yield got
    finally:
        _stop(proc)


if __name__ == "__main__":  # manual check: python tests/sshd.py
    import tempfile

    with tempfile.TemporaryDirectory() as d, local_sshd(d) as srv:
        print(srv)
        print(srv.gateway_spec(python=sys.executable, chdir=d))
