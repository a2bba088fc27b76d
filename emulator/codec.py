"""OpenFlow 1.0 / 1.3 codec: pure functions over bytes.

No I/O, no clock, no Twisted.  The codec encodes what a switch sends and decodes
what a controller sends.  Anything it does not understand decodes to an
:class:`Unknown` value carrying the raw body, never to ``None``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Iterable, Optional

OFP10 = 0x01
OFP13 = 0x04
SUPPORTED_VERSIONS = (OFP10, OFP13)
VERSION_NAMES = {OFP10: "1.0", OFP13: "1.3"}
VERSION_BY_NAME = {v: k for k, v in VERSION_NAMES.items()}

HEADER = struct.Struct("!BBHI")
HEADER_LEN = 8
MAX_MESSAGE_LEN = 0xFFFF

# Message types shared by both versions (same numbers in 1.0 and 1.3).
HELLO, ERROR, ECHO_REQUEST, ECHO_REPLY, EXPERIMENTER = 0, 1, 2, 3, 4
FEATURES_REQUEST, FEATURES_REPLY = 5, 6
GET_CONFIG_REQUEST, GET_CONFIG_REPLY, SET_CONFIG = 7, 8, 9
PACKET_IN, FLOW_REMOVED, PORT_STATUS, PACKET_OUT, FLOW_MOD = 10, 11, 12, 13, 14

# Types whose numbers differ between versions, by name.
_TYPES = {
    OFP10: {
        "port_mod": 15, "stats_request": 16, "stats_reply": 17,
        "barrier_request": 18, "barrier_reply": 19,
        "queue_get_config_request": 20, "queue_get_config_reply": 21,
    },
    OFP13: {
        "group_mod": 15, "port_mod": 16, "table_mod": 17,
        "stats_request": 18, "stats_reply": 19,  # MULTIPART_REQUEST/REPLY
        "barrier_request": 20, "barrier_reply": 21,
        "queue_get_config_request": 22, "queue_get_config_reply": 23,
        "role_request": 24, "role_reply": 25,
        "get_async_request": 26, "get_async_reply": 27, "set_async": 28,
        "meter_mod": 29,
    },
}
_COMMON_NAMES = {
    HELLO: "hello", ERROR: "error", ECHO_REQUEST: "echo_request", ECHO_REPLY: "echo_reply",
    EXPERIMENTER: "experimenter", FEATURES_REQUEST: "features_request",
    FEATURES_REPLY: "features_reply", GET_CONFIG_REQUEST: "get_config_request",
    GET_CONFIG_REPLY: "get_config_reply", SET_CONFIG: "set_config", PACKET_IN: "packet_in",
    FLOW_REMOVED: "flow_removed", PORT_STATUS: "port_status", PACKET_OUT: "packet_out",
    FLOW_MOD: "flow_mod",
}


def msg_type(version: int, name: str) -> int:
    """The numeric message type of ``name`` in OpenFlow ``version``."""
    for num, common in _COMMON_NAMES.items():
        if common == name:
            return num
    try:
        return _TYPES[version][name]
    except KeyError:
        raise ValueError(f"OpenFlow {VERSION_NAMES.get(version, hex(version))} has no message {name!r}") from None


def type_name(version: int, type_: int) -> str:
    if type_ in _COMMON_NAMES:
        return _COMMON_NAMES[type_]
    for name, num in _TYPES.get(version, {}).items():
        if num == type_:
            return name
    return f"type_{type_}"


# Error types/codes used by a switch (same numbers in 1.0 and 1.3 for these).
OFPET_HELLO_FAILED, OFPHFC_INCOMPATIBLE = 0, 0
OFPET_BAD_REQUEST = 1
OFPBRC_BAD_VERSION, OFPBRC_BAD_TYPE, OFPBRC_BAD_STAT = 0, 1, 2
OFPBRC_BAD_LEN = 6

# Multipart (1.3) / stats (1.0) body types.
MP_DESC, MP_FLOW, MP_AGGREGATE, MP_TABLE, MP_PORT_STATS = 0, 1, 2, 3, 4
MP_PORT_DESC = 13  # 1.3 only
MP_GROUP_FEATURES, MP_METER_FEATURES, MP_TABLE_FEATURES = 8, 11, 12

OFPHET_VERSIONBITMAP = 1
OFPCR_ROLE_NOCHANGE, OFPCR_ROLE_EQUAL, OFPCR_ROLE_MASTER, OFPCR_ROLE_SLAVE = 0, 1, 2, 3
# OpenFlow 1.3 role errors: BAD_REQUEST / IS_SLAVE, ROLE_REQUEST_FAILED / STALE, UNSUP, BAD_ROLE.
OFPBRC_IS_SLAVE = 10
OFPET_ROLE_REQUEST_FAILED = 11
OFPRRFC_STALE, OFPRRFC_UNSUP, OFPRRFC_BAD_ROLE = 0, 1, 2
ASYNC_CONFIG = struct.Struct("!6I")    # ofp_async_config's body: PACKET_IN, PORT_STATUS, FLOW_REMOVED mask pairs


class FramingError(ValueError):
    """The byte stream cannot be split into OpenFlow messages."""


# --------------------------------------------------------------------------- decoded values

@dataclass(frozen=True)
class Message:
    """A decoded controller-to-switch message.

    ``name`` is the message's name in OpenFlow terms (``"echo_request"`` ...),
    ``fields`` the decoded body fields, ``body`` the raw bytes after the header.
    """
    version: int
    type: int
    xid: int
    name: str
    body: bytes = b""
    fields: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Unknown:
    """A message this codec does not decode; kept whole so it can be reported or answered."""
    version: int
    type: int
    xid: int
    body: bytes = b""
    name: str = "unknown"


@dataclass(frozen=True)
class PortSpec:
    port_no: int
    hw_addr: bytes
    name: str
    config: int = 0
    state: int = 0
    curr: int = 0x2820  # 10GB_FD | COPPER | AUTONEG (1.3 bit layout)
    curr_speed_kbps: int = 10_000_000


def port_mac(datapath_id: int, port_no: int) -> bytes:
    """A switch port's MAC: locally administered, unique per (switch, port) for up to 2**24
    switches and 2**16 ports (02 + dpid, 3 bytes + port, 2 bytes)."""
    return bytes([0x02]) + (datapath_id & 0xFFFFFF).to_bytes(3, "big") + (port_no & 0xFFFF).to_bytes(2, "big")


def port_spec(datapath_id: int, port_no: int) -> PortSpec:
    """An emulated switch's port, as FEATURES_REPLY / PORT_DESC describe it."""
    return PortSpec(port_no=port_no, hw_addr=port_mac(datapath_id, port_no), name=f"s{datapath_id}-eth{port_no}")


# --------------------------------------------------------------------------- framing

def split_frames(buffer: bytes | bytearray, max_len: int = MAX_MESSAGE_LEN) -> tuple[list[bytes], bytes]:
    """Split ``buffer`` into complete messages; return them and the incomplete tail.

    Raises :class:`FramingError` for a length field below the header size or
    above ``max_len``: the stream cannot be trusted after either.
    """
    frames = []
    view = memoryview(buffer)
    off = 0
    total = len(buffer)
    while total - off >= HEADER_LEN:
        length = (view[off + 2] << 8) | view[off + 3]
        if length < HEADER_LEN:
            raise FramingError(f"OpenFlow length field {length} is below the 8-byte header "
                               f"(version {view[off]}, type {view[off + 1]})")
        if length > max_len:
            raise FramingError(f"OpenFlow message of {length} bytes exceeds the limit of {max_len} "
                               f"(version {view[off]}, type {view[off + 1]})")
        if total - off < length:
            break
        frames.append(bytes(view[off:off + length]))
        off += length
    return frames, bytes(view[off:])


def header(version: int, type_: int, length: int, xid: int) -> bytes:
    return HEADER.pack(version, type_, length, xid)


def _message(version: int, type_: int, xid: int, body: bytes = b"") -> bytes:
    length = HEADER_LEN + len(body)
    if length > MAX_MESSAGE_LEN:
        raise ValueError(f"message body of {len(body)} bytes does not fit an OpenFlow message")
    return HEADER.pack(version, type_, length, xid) + body


# --------------------------------------------------------------------------- HELLO and negotiation

def encode_hello(version: int, xid: int, versions: Iterable[int] = ()) -> bytes:
    """HELLO; with ``versions`` it carries a version-bitmap element (OpenFlow >= 1.3.1)."""
    versions = tuple(versions)
    if not versions:
        return _message(version, HELLO, xid)
    bitmap = 0
    for v in versions:
        bitmap |= 1 << v
    element = struct.pack("!HHI", OFPHET_VERSIONBITMAP, 8, bitmap)
    return _message(version, HELLO, xid, element)


def hello_versions(msg: Message) -> Optional[frozenset]:
    """The versions a HELLO's bitmap element advertises, or None when it has none."""
    body = msg.body
    off = 0
    while len(body) - off >= 4:
        etype, elen = struct.unpack_from("!HH", body, off)
        if elen < 4:
            break
        if etype == OFPHET_VERSIONBITMAP:
            versions = set()
            for word_index in range((elen - 4) // 4):
                (word,) = struct.unpack_from("!I", body, off + 4 + 4 * word_index)
                for bit in range(32):
                    if word >> bit & 1:
                        versions.add(32 * word_index + bit)
            return frozenset(versions)
        off += (elen + 7) // 8 * 8
    return None


def negotiate(ours: Iterable[int], peer_header_version: int, peer_bitmap: Optional[frozenset]) -> Optional[int]:
    """The version both sides speak, by the OpenFlow rules; None when there is none.

    With bitmaps on both sides the highest common version wins; otherwise the
    smaller of the two header versions, if we support it.
    """
    ours = set(ours)
    if peer_bitmap is not None:
        common = ours & set(peer_bitmap)
        return max(common) if common else None
    candidate = min(max(ours), peer_header_version)
    return candidate if candidate in ours else None


ALL_VERSION_NAMES = {1: "1.0", 2: "1.1", 3: "1.2", 4: "1.3", 5: "1.4", 6: "1.5"}


def version_advice(peer_header_version: int, peer_bitmap: Optional[frozenset]) -> str:
    """What a user reads when the controller's HELLO left no common version: the versions it speaks, and the
    ``--openflow`` that works with it (or that none does).  With a bitmap it speaks exactly those versions;
    without one, its header version and (as the spec allows) older ones."""
    def name(v: int) -> str:
        return ALL_VERSION_NAMES.get(v, f"0x{v:02x}")
    if peer_bitmap:
        offered = sorted(peer_bitmap)
        said = " and ".join(name(v) for v in offered) + " only"
        usable = [v for v in offered if v in VERSION_NAMES]
    else:
        said = f"{name(peer_header_version)} only" if peer_header_version == OFP10 else \
            f"{name(peer_header_version)} at most"
        usable = [v for v in VERSION_NAMES if v <= peer_header_version]
    if usable:
        return f"the controller speaks OpenFlow {said}; run with --openflow {VERSION_NAMES[max(usable)]}"
    return (f"the controller speaks OpenFlow {said}, which the suite does not (it speaks OpenFlow "
            f"{' and '.join(VERSION_NAMES.values())})")


# --------------------------------------------------------------------------- switch -> controller

def encode_error(version: int, xid: int, err_type: int, code: int, data: bytes = b"") -> bytes:
    # The spec asks for at least 64 bytes of the offending request.
    return _message(version, ERROR, xid, struct.pack("!HH", err_type, code) + data[:64])


def encode_echo_request(version: int, xid: int, data: bytes = b"") -> bytes:
    return _message(version, ECHO_REQUEST, xid, data)


def encode_echo_reply(version: int, xid: int, data: bytes = b"") -> bytes:
    return _message(version, ECHO_REPLY, xid, data)


def encode_barrier_reply(version: int, xid: int) -> bytes:
    return _message(version, msg_type(version, "barrier_reply"), xid)


def encode_get_config_reply(version: int, xid: int, flags: int = 0, miss_send_len: int = 128) -> bytes:
    return _message(version, GET_CONFIG_REPLY, xid, struct.pack("!HH", flags, miss_send_len))


_PHY_PORT_10 = struct.Struct("!H6s16sIIIIII")      # 48 bytes
_PORT_13 = struct.Struct("!I4x6s2x16sIIIIIIII")    # 64 bytes


def _name16(name: str) -> bytes:
    return name.encode("ascii", "replace")[:15].ljust(16, b"\0")


def encode_port(version: int, port: PortSpec) -> bytes:
    if version == OFP10:
        curr10 = 0x40 | 0x80 | 0x200  # 10GB_FD | COPPER | AUTONEG (1.0 bit layout)
        return _PHY_PORT_10.pack(port.port_no, port.hw_addr, _name16(port.name), port.config,
                                 port.state, curr10, curr10, curr10, 0)
    return _PORT_13.pack(port.port_no, port.hw_addr, _name16(port.name), port.config, port.state,
                         port.curr, port.curr, port.curr, 0, port.curr_speed_kbps, port.curr_speed_kbps)


FEATURES_CAPABILITIES = 0x47  # FLOW_STATS | TABLE_STATS | PORT_STATS | (1.0: STP / 1.3: GROUP) | QUEUE_STATS (both)
ACTIONS_10 = 0xFFF


def encode_features_reply(version: int, xid: int, datapath_id: int, n_buffers: int = 256,
                          n_tables: int = 254, ports: Iterable[PortSpec] = ()) -> bytes:
    if version == OFP10:
        ports = list(ports)
        if len(ports) > MAX_PORTS_10:
            raise ValueError(f"switch {datapath_id} has {len(ports)} ports; an OpenFlow 1.0 FEATURES_REPLY holds "
                             f"at most {MAX_PORTS_10}")
        body = struct.pack("!QIB3xII", datapath_id, n_buffers, n_tables, FEATURES_CAPABILITIES, ACTIONS_10)
        body += b"".join(encode_port(version, p) for p in ports)
    else:
        body = struct.pack("!QIBB2xII", datapath_id, n_buffers, n_tables, 0, FEATURES_CAPABILITIES, 0)
    return _message(version, FEATURES_REPLY, xid, body)


def _stats_reply(version: int, xid: int, stats_type: int, body: bytes, more: bool = False) -> bytes:
    flags = 1 if more else 0
    if version == OFP10:
        head = struct.pack("!HH", stats_type, flags)
    else:
        head = struct.pack("!HH4x", stats_type, flags)
    return _message(version, msg_type(version, "stats_reply"), xid, head + body)


def _desc(s: str, size: int) -> bytes:
    return s.encode("ascii", "replace")[: size - 1].ljust(size, b"\0")


def encode_desc_reply(version: int, xid: int, mfr: str, hw: str, sw: str, serial: str, dp: str) -> bytes:
    body = _desc(mfr, 256) + _desc(hw, 256) + _desc(sw, 256) + _desc(serial, 32) + _desc(dp, 256)
    return _stats_reply(version, xid, MP_DESC, body)


PORTS_PER_PORT_DESC = (MAX_MESSAGE_LEN - HEADER_LEN - 8) // 64     # 1023 ofp_port of 64 bytes
MAX_PORTS_10 = (MAX_MESSAGE_LEN - 32) // 48                          # FEATURES_REPLY of 1.0: 1364 ports


def encode_port_desc_reply(xid: int, ports: Iterable[PortSpec]) -> bytes:
    """OpenFlow 1.3 MULTIPART PORT_DESC reply (1.0 carries ports in FEATURES_REPLY).  More ports
    than one message holds go in several replies, all but the last flagged REPLY_MORE."""
    ports = list(ports)
    chunks = [ports[i:i + PORTS_PER_PORT_DESC] for i in range(0, len(ports), PORTS_PER_PORT_DESC)] or [[]]
    return b"".join(_stats_reply(OFP13, xid, MP_PORT_DESC, b"".join(encode_port(OFP13, p) for p in chunk),
                                 more=i < len(chunks) - 1) for i, chunk in enumerate(chunks))


def encode_empty_stats_reply(version: int, xid: int, stats_type: int) -> bytes:
    """A reply for a stats kind with nothing to list (no flows, no groups ...)."""
    if stats_type == MP_AGGREGATE:
        return _stats_reply(version, xid, stats_type, struct.pack("!QQI4x", 0, 0, 0))
    return _stats_reply(version, xid, stats_type, b"")


# PORT_STATUS reasons and the port state bit for a link that is down (same numbers in 1.0 and 1.3).
OFPPR_ADD, OFPPR_DELETE, OFPPR_MODIFY = 0, 1, 2
OFPPS_LINK_DOWN = 1
OFPPC_PORT_DOWN = 1


def encode_port_status(version: int, xid: int, reason: int, port: PortSpec) -> bytes:
    """An asynchronous PORT_STATUS: ``reason`` (ADD, DELETE, MODIFY) and the port as it now is."""
    return _message(version, PORT_STATUS, xid, struct.pack("!B7x", reason) + encode_port(version, port))


def encode_role_reply(xid: int, role: int, generation_id: int) -> bytes:
    return _message(OFP13, msg_type(OFP13, "role_reply"), xid, struct.pack("!I4xQ", role, generation_id))


def encode_get_async_reply(xid: int, masks: Iterable[int]) -> bytes:
    """GET_ASYNC_REPLY (OpenFlow 1.3): the six masks of ofp_async_config in wire order."""
    return _message(OFP13, msg_type(OFP13, "get_async_reply"), xid, ASYNC_CONFIG.pack(*masks))


# --------------------------------------------------------------------------- controller -> switch

def decode(frame: bytes) -> Message | Unknown:
    """Decode one whole frame (as returned by :func:`split_frames`)."""
    if len(frame) < HEADER_LEN:
        raise FramingError(f"frame of {len(frame)} bytes is shorter than the OpenFlow header")
    version, type_, length, xid = HEADER.unpack_from(frame)
    if length != len(frame):
        raise FramingError(f"length field {length} does not match the frame's {len(frame)} bytes")
    body = frame[HEADER_LEN:]
    if version not in SUPPORTED_VERSIONS and type_ not in (HELLO, ERROR, ECHO_REQUEST, ECHO_REPLY):
        return Unknown(version, type_, xid, body)
    name = type_name(version if version in SUPPORTED_VERSIONS else OFP13, type_)
    try:
        fields = _decode_fields(version, name, body)
    except (struct.error, ValueError):
        return Unknown(version, type_, xid, body, name="malformed_" + name)
    if name.startswith("type_"):
        return Unknown(version, type_, xid, body)
    return Message(version, type_, xid, name, body, fields)


def _decode_fields(version: int, name: str, body: bytes) -> dict:
    if name == "set_config":
        flags, miss_send_len = struct.unpack_from("!HH", body)
        return {"flags": flags, "miss_send_len": miss_send_len}
    if name == "error":
        err_type, code = struct.unpack_from("!HH", body)
        return {"err_type": err_type, "code": code, "data": body[4:]}
    if name in ("stats_request", "stats_reply"):
        stats_type, flags = struct.unpack_from("!HH", body)
        return {"stats_type": stats_type, "flags": flags}
    if name in ("role_request", "role_reply"):
        role, generation_id = struct.unpack_from("!I4xQ", body)
        return {"role": role, "generation_id": generation_id}
    if name in ("set_async", "get_async_reply"):
        return {"masks": ASYNC_CONFIG.unpack_from(body)}
    if name == "features_reply":
        dpid, n_buffers, n_tables = struct.unpack_from("!QIB", body)
        return {"datapath_id": dpid, "n_buffers": n_buffers, "n_tables": n_tables}
    if name == "packet_out":
        return packet_out_body_fields(version, body)
    return {}


# --------------------------------------------------------------------------- asynchronous messages
# PACKET_IN (switch -> controller) and the fields of PACKET_OUT / FLOW_MOD the response
# matcher needs.  The hot path (emulator/traffic.py) reads those fields at fixed offsets;
# the offsets live here, next to the layouts they come from.

NO_BUFFER = 0xFFFFFFFF
OFPR_NO_MATCH = 0
OFPP_FLOOD_10, OFPP_CONTROLLER_10 = 0xFFFB, 0xFFFD
OFPP_FLOOD_13, OFPP_CONTROLLER_13 = 0xFFFFFFFB, 0xFFFFFFFD
OXM_OF_IN_PORT = 0x80000004   # class OPENFLOW_BASIC, field IN_PORT, no mask, 4 bytes
OXM_OF_ETH_SRC_FIELD = 4

# Where a PACKET_IN's frame starts: 1.0 has a fixed 18-byte head; 1.3 carries an
# OXM match (here IN_PORT only: 4 + 8 bytes, padded to 16) and 2 bytes of pad.
PACKET_IN_DATA_OFFSET = {OFP10: 18, OFP13: 42}
# A PACKET_OUT's head before its actions: 1.0 16 bytes, 1.3 24 bytes; actions_len at 14 / 16.
PACKET_OUT_HEAD = {OFP10: 16, OFP13: 24}
PACKET_OUT_ACTIONS_LEN_AT = {OFP10: 14, OFP13: 16}
# FLOW_MOD's buffer_id: 1.0 after the 40-byte match and cookie/command/timeouts/priority;
# 1.3 after cookie, cookie_mask, table_id, command, timeouts and priority.
FLOW_MOD_BUFFER_ID_AT = {OFP10: 64, OFP13: 32}
FLOW_MOD_MATCH_AT = {OFP10: 8, OFP13: 48}


def encode_packet_in(version: int, xid: int, buffer_id: int, in_port: int, frame: bytes,
                     total_len: Optional[int] = None, reason: int = OFPR_NO_MATCH,
                     table_id: int = 0, cookie: int = 0) -> bytes:
    """PACKET_IN carrying ``frame`` (already truncated by the caller when buffered)."""
    total = len(frame) if total_len is None else total_len
    if version == OFP10:
        body = struct.pack("!IHHBx", buffer_id, total, in_port, reason) + frame
    else:
        match = struct.pack("!HHII4x", 1, 12, OXM_OF_IN_PORT, in_port)  # OFPMT_OXM, length 12, padded to 16
        body = struct.pack("!IHBBQ", buffer_id, total, reason, table_id, cookie) + match + b"\0\0" + frame
    return _message(version, PACKET_IN, xid, body)


def encode_packet_out(version: int, xid: int, buffer_id: int, in_port: int, out_port: int,
                      data: bytes = b"") -> bytes:
    """PACKET_OUT with one OUTPUT action (a controller's answer; the null controller sends it)."""
    if version == OFP10:
        action = struct.pack("!HHHH", 0, 8, out_port, 0)
        body = struct.pack("!IHH", buffer_id, in_port, len(action)) + action + data
    else:
        action = struct.pack("!HHIH6x", 0, 16, out_port, 0)
        body = struct.pack("!IIH6x", buffer_id, in_port, len(action)) + action + data
    return _message(version, PACKET_OUT, xid, body)


def encode_role_request(xid: int, role: int, generation_id: int = 0) -> bytes:
    """ROLE_REQUEST (OpenFlow 1.3; a controller's message: the tests' scripted controllers send it)."""
    return _message(OFP13, msg_type(OFP13, "role_request"), xid, struct.pack("!I4xQ", role, generation_id))


def encode_set_async(xid: int, masks: Iterable[int]) -> bytes:
    """SET_ASYNC (OpenFlow 1.3; a controller's message): the six masks of ofp_async_config in wire order."""
    return _message(OFP13, msg_type(OFP13, "set_async"), xid, ASYNC_CONFIG.pack(*masks))


def packet_in_fields(frame: bytes) -> dict:
    """Decode a PACKET_IN (used by the null controller and the tests, not the emulator's hot path)."""
    version = frame[0]
    if version == OFP10:
        buffer_id, total_len, in_port, reason = struct.unpack_from("!IHHB", frame, 8)
        return {"buffer_id": buffer_id, "total_len": total_len, "in_port": in_port, "reason": reason,
                "data": frame[18:]}
    buffer_id, total_len, reason, table_id, cookie = struct.unpack_from("!IHBBQ", frame, 8)
    mtype, mlen = struct.unpack_from("!HH", frame, 24)
    in_port = None
    off, end = 28, 24 + mlen
    while off + 4 <= end:
        (oxm,) = struct.unpack_from("!I", frame, off)
        size = oxm & 0xFF
        if oxm == OXM_OF_IN_PORT:
            (in_port,) = struct.unpack_from("!I", frame, off + 4)
        off += 4 + size
    data_at = 24 + (mlen + 7) // 8 * 8 + 2
    return {"buffer_id": buffer_id, "total_len": total_len, "in_port": in_port, "reason": reason,
            "table_id": table_id, "cookie": cookie, "data": frame[data_at:]}


# Reserved port numbers by their low 16 bits (OpenFlow 1.0 uses 0xFFF8.., 1.3 0xFFFFFFF8..).
PORT_IN_PORT, PORT_TABLE, PORT_NORMAL, PORT_FLOOD, PORT_ALL, PORT_CONTROLLER, PORT_LOCAL = range(0xFFF8, 0xFFFF)


def packet_out_fields(frame: bytes) -> dict:
    """Decode a whole PACKET_OUT frame: see :func:`packet_out_body_fields`."""
    return packet_out_body_fields(frame[0], frame[HEADER_LEN:])


def packet_out_body_fields(version: int, body: bytes) -> dict:
    """A PACKET_OUT's buffer_id, in_port, the ports of its OUTPUT actions (reserved ports as
    the PORT_* constants above, whatever the version) and the frame it carries."""
    if version == OFP10:
        buffer_id, in_port, actions_len = struct.unpack_from("!IHH", body)
        reserved_from = 0xFF00
    else:
        buffer_id, in_port, actions_len = struct.unpack_from("!IIH", body)
        reserved_from = 0xFFFFFF00
    head = PACKET_OUT_HEAD[version] - HEADER_LEN
    out_ports = []
    off, end = head, min(head + actions_len, len(body))
    while off + 4 <= end:
        atype, alen = struct.unpack_from("!HH", body, off)
        if alen < 8:
            raise ValueError(f"PACKET_OUT action at byte {off + HEADER_LEN} has length {alen} (< 8)")
        if atype == 0:   # OFPAT_OUTPUT
            (port,) = struct.unpack_from("!H" if version == OFP10 else "!I", body, off + 4)
            out_ports.append(port & 0xFFFF if port >= reserved_from else port)
        off += alen
    if in_port >= reserved_from:
        in_port &= 0xFFFF
    return {"buffer_id": buffer_id, "in_port": in_port, "out_ports": out_ports, "data": body[head + actions_len:]}


def flow_mod_eth_src(frame: bytes) -> Optional[bytes]:
    """The eth_src a FLOW_MOD matches on (1.0 dl_src unless wildcarded, 1.3 OXM ETH_SRC), or None."""
    version = frame[0]
    if version == OFP10:
        (wildcards,) = struct.unpack_from("!I", frame, 8)
        return None if wildcards & (1 << 2) else frame[14:20]  # OFPFW_DL_SRC
    if len(frame) < 52:
        return None
    _mtype, mlen = struct.unpack_from("!HH", frame, 48)
    off, end = 52, min(48 + mlen, len(frame))
    while off + 4 <= end:
        (oxm,) = struct.unpack_from("!I", frame, off)
        size = oxm & 0xFF
        if (oxm >> 16) == 0x8000 and (oxm >> 9) & 0x7F == OXM_OF_ETH_SRC_FIELD:
            return frame[off + 4:off + 10]
        off += 4 + size
    return None
