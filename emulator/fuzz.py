"""The robustness screen's seeded fuzzer: one fixed field of one well-formed switch-to-controller message
changed at a time.

Each message below is a valid template (built once per version) with its fixed fields declared as
(name, offset, size).  A *case* sets one field to one value and is named by exactly that:
``FZ:packet_in.buffer_id=0xffffffff``.  The name is the whole recipe, so every case, boundary or random,
replays with ``--malformed-kinds FZ:...`` and nothing else.

* ``boundary`` cases: every field of every message set to 0, 1, max-1, max, its value with the sign bit
  flipped, and its value +1 and -1 (for the length fields these are the off-by-one lengths), each value
  the template does not already hold.
* ``random`` cases: ``count`` (message, field, value) triples drawn with ``random.Random(seed)``.

Fuzz cases judge robustness only: the controller may process, answer, ignore or close as it likes; a
HANG, CRASH or COLLATERAL fails.  Pure: standard library, the codec and the marked messages
(:mod:`emulator.marked`).
"""

from __future__ import annotations

import functools
import random
import struct

from . import codec
from . import marked as mk
from .codec import OFP10, OFP13

PREFIX = "FZ:"


def _templates(version: int) -> dict:
    """{message: (bytes, ((field, offset, size), ...))} for ``version``."""
    head = (("version", 0, 1), ("type", 1, 1), ("length", 2, 2), ("xid", 4, 4))
    out = {
        "echo_request": (mk.msg(version, codec.ECHO_REQUEST, b"fuzz"), head),
        "barrier_reply": (mk.msg(version, "barrier_reply"), head),
        "error": (mk.error(version, 1, 1, b"\0" * 16), head + (("err_type", 8, 2), ("code", 10, 2))),
        "get_config_reply": (codec.encode_get_config_reply(version, mk.MARK_XID, 0, 128),
                             head + (("flags", 8, 2), ("miss_send_len", 10, 2))),
        "port_status": (mk.port_status(version, reason=2, port_no=1),
                        head + (("reason", 8, 1), ("port_no", 16, 2 if version == OFP10 else 4),
                                ("config", 40 if version == OFP10 else 48, 4),
                                ("state", 44 if version == OFP10 else 52, 4))),
        "stats_reply": (codec.encode_desc_reply(version, mk.MARK_XID, "m", "h", "s", "1", "d"),
                        head + (("stats_type", 8, 2), ("flags", 10, 2))),
    }
    if version == OFP10:
        out["packet_in"] = (mk.pin(version), head + (("buffer_id", 8, 4), ("total_len", 12, 2), ("in_port", 14, 2),
                                                     ("reason", 16, 1)))
        out["features_reply"] = (codec.encode_features_reply(version, mk.MARK_XID, 0xB4D, 256, 254),
                                 head + (("datapath_id", 8, 8), ("n_buffers", 16, 4), ("n_tables", 20, 1),
                                         ("capabilities", 24, 4), ("actions", 28, 4)))
        out["flow_removed"] = (mk.flow_removed(version), head + (("wildcards", 8, 4), ("cookie", 48, 8),
                                                                 ("priority", 56, 2), ("reason", 58, 1),
                                                                 ("idle_timeout", 68, 2), ("packet_count", 72, 8)))
    else:
        out["packet_in"] = (mk.pin(version), head + (("buffer_id", 8, 4), ("total_len", 12, 2), ("reason", 14, 1),
                                                     ("table_id", 15, 1), ("cookie", 16, 8), ("match.type", 24, 2),
                                                     ("match.length", 26, 2), ("oxm.header", 28, 4),
                                                     ("oxm.in_port", 32, 4)))
        out["features_reply"] = (codec.encode_features_reply(version, mk.MARK_XID, 0xB4D, 256, 254),
                                 head + (("datapath_id", 8, 8), ("n_buffers", 16, 4), ("n_tables", 20, 1),
                                         ("auxiliary_id", 21, 1), ("capabilities", 24, 4)))
        out["flow_removed"] = (mk.flow_removed(version), head + (("cookie", 8, 8), ("priority", 16, 2),
                                                                 ("reason", 18, 1), ("table_id", 19, 1),
                                                                 ("idle_timeout", 28, 2), ("packet_count", 32, 8),
                                                                 ("match.length", 50, 2)))
        out["role_reply"] = (codec.encode_role_reply(mk.MARK_XID, 2, 7), head + (("role", 8, 4),
                                                                                  ("generation_id", 16, 8)))
    return out


@functools.lru_cache(maxsize=None)
def templates(version: int) -> dict:
    return _templates(version)


def _read(data: bytes, offset: int, size: int) -> int:
    return int.from_bytes(data[offset:offset + size], "big")


def boundary_values(original: int, size: int) -> list:
    top = (1 << (8 * size)) - 1
    values = [0, 1, top - 1, top, original ^ (1 << (8 * size - 1)), (original + 1) & top, (original - 1) & top]
    return [v for v in dict.fromkeys(values) if v != original]


def case_id(message: str, field: str, value: int) -> str:
    return f"{PREFIX}{message}.{field}={value:#x}"


def parse(case: str) -> tuple:
    """(message, field, value) of a case id; ValueError naming what is wrong."""
    try:
        body = case[len(PREFIX):] if case.upper().startswith(PREFIX) else ""
        target, value = body.split("=", 1)
        message, field = target.split(".", 1)
        return message.lower(), field.lower(), int(value, 0)
    except ValueError:
        raise ValueError(f"fuzz case {case!r} is not FZ:MESSAGE.FIELD=VALUE (e.g. FZ:packet_in.buffer_id=0x0)") \
            from None


def build(case: str, version: int) -> bytes:
    message, field, value = parse(case)
    table = templates(version)
    if message not in table:
        raise ValueError(f"fuzz case {case!r}: no message {message!r} for OpenFlow "
                         f"{codec.VERSION_NAMES[version]} ({', '.join(sorted(table))})")
    data, fields = table[message]
    spec = next((f for f in fields if f[0] == field), None)
    if spec is None:
        raise ValueError(f"fuzz case {case!r}: {message} has no field {field!r} "
                         f"({', '.join(f[0] for f in fields)})")
    _, offset, size = spec
    if not 0 <= value < 1 << (8 * size):
        raise ValueError(f"fuzz case {case!r}: {value:#x} does not fit {field}'s {size} byte(s)")
    return data[:offset] + value.to_bytes(size, "big") + data[offset + size:]


def boundary_cases(version: int) -> list:
    out = []
    for message, (data, fields) in templates(version).items():
        for field, offset, size in fields:
            out += [case_id(message, field, v) for v in boundary_values(_read(data, offset, size), size)]
    return out


def random_cases(version: int, count: int, seed: int) -> list:
    rng = random.Random(seed)
    table = templates(version)
    messages = sorted(table)
    out = []
    for _ in range(count):
        message = rng.choice(messages)
        field, _offset, size = rng.choice(table[message][1])
        out.append(case_id(message, field, rng.getrandbits(8 * size)))
    return list(dict.fromkeys(out))


def cases(modes: tuple, version: int, count: int, seed: int) -> list:
    out = []
    if "boundary" in modes:
        out += boundary_cases(version)
    if "random" in modes:
        out += random_cases(version, count, seed)
    return list(dict.fromkeys(out))


def self_check() -> None:  # pragma: no cover - exercised by the unit tests
    for version in (OFP10, OFP13):
        for message, (data, _fields) in templates(version).items():
            length = struct.unpack_from("!H", data, 2)[0]
            assert length == len(data), message
