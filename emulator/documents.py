"""The project's one YAML document loader: profiles, known findings, topologies and acknowledgements all read their
files here, so a file that cannot be read or parsed gets one message shape wherever it is given:

    WHAT PATH: cannot read it: REASON
    WHAT PATH: not valid YAML at line L column C: PROBLEM

raised as the caller's own error class (a ``ValueError``), so each caller keeps the exception its users catch.
It lives in the emulator, the lowest package (topology files are read there), with PyYAML imported on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Type


def load_yaml(path, what: str, error: Type[Exception] = ValueError) -> Any:
    """The YAML document in ``path`` (None for an empty file), or ``error`` naming ``what`` and the file."""
    import yaml
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise error(f"{what} {path}: cannot read it: {reason}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{what} {path}: not valid YAML{where}: {problem}") from None
