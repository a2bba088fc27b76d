"""bmwg-sdn's OpenFlow switch emulator: codec, per-switch protocol, network driver.

It runs as its own process (``python -m emulator ...``) with its own reactor and
reports JSON lines on standard output.
"""

__version__ = "0.1.0"
