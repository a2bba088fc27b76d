"""Marked switch-to-controller messages, built from struct templates: the robustness screen's catalogue
(:mod:`emulator.malformed`) and its fuzzer (:mod:`emulator.fuzz`) make their bytes from these.

Every message that names a datapath frame carries the marker source MAC :data:`MARK_MAC` and the buffer id
:data:`MARK_BUFFER`, and its xid is :data:`MARK_XID` (unless told otherwise), so what a controller does with it can be
told apart from what it does for other switches.  Pure: standard library and :mod:`emulator.codec` only.
"""

from __future__ import annotations

import random
import struct
from typing import Optional

from . import codec
from .codec import OFP10, OFP13

MARK_XID = 0xB4D0_0001
MARK_BUFFER = 0x0BAD_0001
MARK_MAC = bytes.fromhex("02bad05cee01")


def hdr(version: int, type_: int, length: int, xid: int = MARK_XID) -> bytes:
    return struct.pack("!BBHI", version, type_, length, xid)


def msg(version: int, type_, body: bytes = b"", xid: int = MARK_XID) -> bytes:
    """A message with a correct length field; ``type_`` a number or a name."""
    if isinstance(type_, str):
        type_ = codec.msg_type(version, type_)
    return hdr(version, type_, 8 + len(body), xid) + body


def arp_frame(src: bytes = MARK_MAC) -> bytes:
    """A broadcast ARP request from ``src``, padded to 60 bytes."""
    eth = b"\xff" * 6 + src + b"\x08\x06"
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, src, bytes([10, 0, 0, 1]), b"\0" * 6, bytes([10, 0, 0, 2]))
    return (eth + arp).ljust(60, b"\0")


def oxm(field_no: int, value: bytes, mask: bytes = b"", cls: int = 0x8000) -> bytes:
    has = 1 if mask else 0
    return struct.pack("!HBB", cls, field_no << 1 | has, len(value) + len(mask)) + value + mask


IN_PORT_1 = oxm(0, struct.pack("!I", 1))


def match13(oxms: bytes = IN_PORT_1, mtype: int = 1, length: Optional[int] = None, pad: bool = True) -> bytes:
    """An ofp_match: ``length`` defaults to 4 + the OXMs; padded to 8 bytes unless ``pad`` is off."""
    body = struct.pack("!HH", mtype, 4 + len(oxms) if length is None else length) + oxms
    return body + b"\0" * ((-len(body)) % 8 if pad else 0)


def packet_in(version: int, data: bytes = b"", *, buffer_id: int = MARK_BUFFER, total_len: Optional[int] = None,
              reason: int = 0, table_id: int = 0, cookie: int = 0, match: Optional[bytes] = None,
              in_port: int = 1, xid: int = MARK_XID, type_: int = codec.PACKET_IN) -> bytes:
    total = len(data) if total_len is None else total_len
    if version == OFP10:
        body = struct.pack("!IHHBx", buffer_id, total, in_port, reason) + data
    else:
        m = match13(oxm(0, struct.pack("!I", in_port))) if match is None else match
        body = struct.pack("!IHBBQ", buffer_id, total, reason, table_id, cookie) + m + b"\0\0" + data
    return hdr(version, type_, 8 + len(body), xid) + body


def pin(version: int, **kw) -> bytes:
    """The marked PACKET_IN (an ARP from MARK_MAC), with any field overridden."""
    kw.setdefault("data", arp_frame())
    return packet_in(version, **kw)


def multipart_reply(version: int, mp_type: int, body: bytes, flags: int = 0, xid: int = MARK_XID) -> bytes:
    head = struct.pack("!HH", mp_type, flags) if version == OFP10 else struct.pack("!HH4x", mp_type, flags)
    return msg(version, "stats_reply", head + body, xid)


def flow_stats_13(instructions: bytes, length: Optional[int] = None) -> bytes:
    m = match13(b"")
    entry_len = 48 + len(m) + len(instructions)
    return struct.pack("!HBxIIHHHH4xQQQ", entry_len if length is None else length, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0) \
        + m + instructions


def flow_stats_10(actions: bytes, length: Optional[int] = None) -> bytes:
    entry_len = 88 + len(actions)
    return struct.pack("!HBx40sIIHHH6xQQQ", entry_len if length is None else length, 0, b"\0" * 40, 1, 0, 1, 0, 0,
                       0, 0, 0) + actions


def flow_stats(version: int, actions10: bytes = b"", instructions13: bytes = b"", length: Optional[int] = None):
    if version == OFP10:
        return multipart_reply(version, codec.MP_FLOW, flow_stats_10(actions10, length))
    return multipart_reply(version, codec.MP_FLOW, flow_stats_13(instructions13, length))


def output_action(version: int, port: int = 1) -> bytes:
    if version == OFP10:
        return struct.pack("!HHHH", 0, 8, port, 0xFFFF)
    return struct.pack("!HHIH6x", 0, 16, port, 0xFFFF)


def apply_actions(actions: bytes, length: Optional[int] = None) -> bytes:
    return struct.pack("!HH4x", 4, 8 + len(actions) if length is None else length) + actions


def group_desc(bucket: bytes) -> bytes:
    return multipart_reply(OFP13, 7, struct.pack("!HBxI", 8 + len(bucket), 0, 1) + bucket)


def bucket(actions: bytes, length: Optional[int] = None) -> bytes:
    return struct.pack("!HHII4x", 16 + len(actions) if length is None else length, 0, 0xFFFFFFFF, 0xFFFFFFFF) \
        + actions


def queue_config_reply(version: int, prop_len: int) -> bytes:
    prop = struct.pack("!HH4xH6x", 1, prop_len, 100)           # OFPQT_MIN_RATE, 16 bytes when well formed
    if version == OFP10:
        queue = struct.pack("!IH2x", 1, 8 + len(prop)) + prop
        return msg(version, "queue_get_config_reply", struct.pack("!H6x", 1) + queue)
    queue = struct.pack("!IIH6x", 1, 1, 16 + len(prop)) + prop
    return msg(version, "queue_get_config_reply", struct.pack("!I4x", 1) + queue)


def port(version: int, port_no: int = 1, name: Optional[bytes] = None) -> bytes:
    spec = codec.port_spec(0xB4D, port_no & 0xFFFF if version == OFP10 else port_no)
    body = codec.encode_port(version, spec)
    if version == OFP10:
        body = struct.pack("!H", port_no) + body[2:]
    else:
        body = struct.pack("!I", port_no) + body[4:]
    if name is not None:
        at = 8 if version == OFP10 else 16
        body = body[:at] + name + body[at + 16:]
    return body


def port_status(version: int, reason: int = 0, port_no: int = 1, name: Optional[bytes] = None) -> bytes:
    return msg(version, codec.PORT_STATUS, struct.pack("!B7x", reason) + port(version, port_no, name))


def hello13(elements: bytes, version: int = OFP13) -> bytes:
    return msg(version, codec.HELLO, elements)


def bitmap_element(bitmap: int, length: int = 8) -> bytes:
    return struct.pack("!HHI", 1, length, bitmap)


def seeded_bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def experimenter(version: int, exp_id: int = 0xDEADBEEF, short: bool = False) -> bytes:
    if short:
        return msg(version, codec.EXPERIMENTER, b"\xde\xad")
    body = struct.pack("!II", exp_id, 1) if version == OFP13 else struct.pack("!I", exp_id) + b"\0" * 4
    return msg(version, codec.EXPERIMENTER, body)


def flow_removed(version: int) -> bytes:
    if version == OFP10:
        body = b"\0" * 40 + struct.pack("!QHBxIIH2xQQ", 0xB4D, 1, 0, 1, 0, 0, 0, 0)
    else:
        body = struct.pack("!QHBBIIHHQQ", 0xB4D, 1, 0, 0, 1, 0, 0, 0, 0, 0) + match13(oxm(3, MARK_MAC))
    return msg(version, codec.FLOW_REMOVED, body)


def error(version: int, err_type: int, code: int, data: bytes = b"") -> bytes:
    return msg(version, codec.ERROR, struct.pack("!HH", err_type, code) + data)


def other(version: int) -> int:
    """The supported version this session did not negotiate."""
    return OFP10 if version == OFP13 else OFP13


def drip(message: bytes, every: float = 0.1) -> list:
    return [(every * i, message[i:i + 1]) for i in range(len(message))]
