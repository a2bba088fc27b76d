"""The compiled modules as the tests build them: every warning an error, and under sanitizers.

* ``gcc -Wall -Wextra -Wjump-misses-init -Werror``: a goto past an initialisation once returned an uninitialised
  pointer from ``_fastpath.match()`` (issue 46); the project's install builds with ``-O2`` only, so the tests hold
  the stricter line.
* AddressSanitizer and UndefinedBehaviorSanitizer (``-fsanitize=address,undefined``, every finding fatal): the
  compiled PACKET_IN path's unit tests (tests/test_fastpath.py, test_traffic.py, test_nullctl.py,
  test_async_logic.py; the compiled parameter of each), the compiled responder's loopback tests
  (test_compiled_responder.py) and a longer run of the fuzz in test_fastpath.py, in a child
  Python that loads the sanitized build as ``emulator._fastpath`` (``PYTHONMALLOC=malloc``, so every Python buffer
  the module reads or writes has ASan's guard zones around it).

Both need gcc and Python's headers; without them the tests skip, and fail instead with ``BMWG_REQUIRE_FASTPATH=1``
(as ``.ci/run`` sets it where there is a C compiler).
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REQUIRE_FASTPATH

pytestmark = pytest.mark.component

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"_fastpath": ROOT / "emulator" / "_fastpath.c", "_pingpong": ROOT / "emulator" / "_pingpong.c"}
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Wjump-misses-init", "-Werror"]
SANITIZE = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
FUZZ_CALLS_UNDER_SANITIZERS = 6000


def _gcc() -> str:
    gcc = shutil.which("gcc")
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if gcc and include.exists():
        return gcc
    why = f"gcc is {'there' if gcc else 'not installed'}; Python.h is {'there' if include.exists() else 'missing'}"
    if os.environ.get(REQUIRE_FASTPATH, "").strip() not in ("", "0"):
        pytest.fail(f"{REQUIRE_FASTPATH} is set and the compiled modules cannot be built: {why}")
    pytest.skip(f"the compiled modules cannot be built here: {why}")


def build(name: str, out: Path, flags: list) -> Path:
    gcc = _gcc()
    target = out / (name + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = [gcc, *flags, "-shared", "-fPIC", "-I", sysconfig.get_paths()["include"], str(SOURCES[name]),
           "-o", str(target)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    return target


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_compiled_modules_build_with_every_warning_an_error(tmp_path, name):
    build(name, tmp_path, ["-O2", *STRICT])


LOAD_SANITIZED = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("emulator._fastpath", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules["emulator._fastpath"] = module
import emulator
emulator._fastpath = module
from emulator import fastpath
assert fastpath.native is module, fastpath.label()
import pytest
sys.exit(pytest.main(sys.argv[2:]))
"""


def test_the_compiled_path_passes_its_tests_and_a_fuzz_under_address_and_undefined_behaviour_sanitizers(tmp_path):
    so = build("_fastpath", tmp_path, [*SANITIZE, *STRICT])
    # the sanitizer's runtime first in the process, and the C++ runtime with it: matplotlib's C++ extension throws
    # exceptions, which ASan's interceptor can pass on only when libstdc++ was there from the start
    preload = [subprocess.run([_gcc(), f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
               for lib in ("libasan.so", "libstdc++.so")]
    assert all(Path(lib).exists() for lib in preload), f"no sanitizer runtime beside gcc ({preload})"
    env = dict(os.environ, LD_PRELOAD=" ".join(preload), PYTHONMALLOC="malloc",
               BMWG_FUZZ_CALLS=str(FUZZ_CALLS_UNDER_SANITIZERS),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    env.pop("BMWG_PURE_PYTHON", None)
    tests = ["tests/test_fastpath.py", "tests/test_traffic.py", "tests/test_nullctl.py", "tests/test_async_logic.py",
             "tests/test_compiled_responder.py"]
    # --capture=sys: a sanitizer's report goes to the real stderr (file descriptor 2), kept when the child aborts
    cmd = [sys.executable, "-c", LOAD_SANITIZED, str(so), "-q", "-p", "no:cacheprovider", "--capture=sys",
           "--tier", "unit,component", "-k", "not python and not serial_trial", *tests]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    tail = (done.stdout[-3000:] + done.stderr[-3000:])
    assert done.returncode == 0, tail
    assert "AddressSanitizer" not in done.stderr and "runtime error" not in done.stderr, tail
    assert " passed" in done.stdout and " failed" not in done.stdout, tail
