"""FLOW_MOD, match and action codec for OpenFlow 1.0 and 1.3: pure functions over bytes.

The data plane needs the whole of a FLOW_MOD: command, priority, timeouts, flags, the match
and the instructions.  Both versions decode to one form, so the flow table knows no version:

* a match is a dict ``field name -> (value, mask)`` with OXM field names (``in_port``,
  ``eth_dst``, ``ipv4_src`` ...); values and masks are ints (MACs and addresses too), and an
  exact field has the full-width mask.  VLANs follow 1.3: ``vlan_vid`` is ``0x1000 | vid`` for a
  tagged frame and ``0`` (OFPVID_NONE) for an untagged one.
* instructions are tuples: ``("apply", actions)``, ``("write", actions)``, ``("clear",)``,
  ``("goto", table_id)``, ``("meter", id)``, ``("write_metadata", value, mask)``.  A 1.0 FLOW_MOD's
  action list is one ``("apply", actions)``.
* actions are tuples: ``("output", port, max_len)``, ``("set_field", name, value)``,
  ``("push_vlan", ethertype)``, ``("pop_vlan",)``, ``("group", id)``, ``("set_queue", id)``,
  ``("dec_nw_ttl",)``, ``("other", type)``.  Reserved ports are the low-16-bit ``codec.PORT_*``
  numbers whatever the version, as in :func:`emulator.codec.packet_out_body_fields`.

The raw match and instruction bytes are kept, so FLOW_REMOVED and flow statistics give the
controller back exactly what it sent.  Hand-written because this is the data plane's hot path:
see ``python -m fixtures.selfbench flowmod`` for the measurement against Ryu's own parser.
"""

from __future__ import annotations

import struct
from typing import Iterable, Optional

from . import codec
from .codec import OFP10, OFP13

# FLOW_MOD commands and flags (same numbers in 1.0 and 1.3, except flag 4: EMERG / RESET_COUNTS).
ADD, MODIFY, MODIFY_STRICT, DELETE, DELETE_STRICT = range(5)
COMMAND_NAMES = ("add", "modify", "modify_strict", "delete", "delete_strict")
FF_SEND_FLOW_REM, FF_CHECK_OVERLAP, FF_RESET_COUNTS = 1, 2, 4
OFPTT_ALL = 0xFF
OFPG_ANY = 0xFFFFFFFF
PORT_ANY = 0xFFFF          # OFPP_NONE (1.0) / OFPP_ANY (1.3), as a low-16-bit reserved port
VID_PRESENT = 0x1000

# FLOW_REMOVED reasons.
RR_IDLE_TIMEOUT, RR_HARD_TIMEOUT, RR_DELETE = 0, 1, 2

# Field widths in bits: exact fields get the full mask.
FIELD_BITS = {
    "in_port": 32, "in_phy_port": 32, "metadata": 64, "eth_dst": 48, "eth_src": 48, "eth_type": 16,
    "vlan_vid": 13, "vlan_pcp": 3, "ip_dscp": 6, "ip_ecn": 2, "ip_proto": 8, "ipv4_src": 32, "ipv4_dst": 32,
    "tcp_src": 16, "tcp_dst": 16, "udp_src": 16, "udp_dst": 16, "sctp_src": 16, "sctp_dst": 16,
    "icmpv4_type": 8, "icmpv4_code": 8, "arp_op": 16, "arp_spa": 32, "arp_tpa": 32, "arp_sha": 48,
    "arp_tha": 48, "ipv6_src": 128, "ipv6_dst": 128, "ipv6_flabel": 20, "icmpv6_type": 8, "icmpv6_code": 8,
    "tp_src": 16, "tp_dst": 16,
}
# OXM OPENFLOW_BASIC field numbers (1.3 §7.2.3.7), by number.
OXM_FIELDS = ("in_port", "in_phy_port", "metadata", "eth_dst", "eth_src", "eth_type", "vlan_vid", "vlan_pcp",
              "ip_dscp", "ip_ecn", "ip_proto", "ipv4_src", "ipv4_dst", "tcp_src", "tcp_dst", "udp_src", "udp_dst",
              "sctp_src", "sctp_dst", "icmpv4_type", "icmpv4_code", "arp_op", "arp_spa", "arp_tpa", "arp_sha",
              "arp_tha", "ipv6_src", "ipv6_dst", "ipv6_flabel", "icmpv6_type", "icmpv6_code")
OXM_NUMBER = {name: i for i, name in enumerate(OXM_FIELDS)}
OXM_CLASS_BASIC = 0x8000


class FlowModError(ValueError):
    """A FLOW_MOD this codec cannot read; the message says where and why."""


def full_mask(name: str) -> int:
    return (1 << FIELD_BITS.get(name, 128)) - 1


def _reserved(port: int, version: int) -> int:
    limit = 0xFF00 if version == OFP10 else 0xFFFFFF00
    return port & 0xFFFF if port >= limit else port


def _field(name: str, value: int, mask: Optional[int] = None) -> tuple:
    full = full_mask(name)
    mask = full if mask is None else mask & full
    return (value & mask, mask)


# --------------------------------------------------------------------------- OpenFlow 1.3
def decode_oxm_match(buf: bytes, at: int) -> tuple[dict, int]:
    """The OXM match (``ofp_match`` type OXM) at ``at``: the match dict and the offset past its
    padding."""
    if len(buf) < at + 4:
        raise FlowModError(f"match at byte {at} is cut short")
    mtype, mlen = struct.unpack_from("!HH", buf, at)
    if mtype != 1:
        raise FlowModError(f"match at byte {at} has type {mtype}, not OXM (1)")
    end = at + mlen
    if mlen < 4 or end > len(buf):
        raise FlowModError(f"match at byte {at} has length {mlen}, beyond the message ({len(buf) - at} bytes)")
    match = {}
    off = at + 4
    while off + 4 <= end:
        (head,) = struct.unpack_from("!I", buf, off)
        oclass, num, hasmask, size = head >> 16, (head >> 9) & 0x7F, (head >> 8) & 1, head & 0xFF
        if off + 4 + size > end:
            raise FlowModError(f"OXM field at byte {off} ({size} bytes) runs past the match")
        raw = buf[off + 4:off + 4 + size]
        if oclass == OXM_CLASS_BASIC and num < len(OXM_FIELDS):
            name = OXM_FIELDS[num]
        else:
            name = f"oxm_{oclass:04x}_{num}"     # kept: an entry with it never matches a frame here
        half = size // 2 if hasmask else size
        value = int.from_bytes(raw[:half], "big")
        mask = int.from_bytes(raw[half:], "big") if hasmask else None
        match[name] = _field(name, value, mask)
        off += 4 + size
    return match, at + (mlen + 7) // 8 * 8


def _tlvs(buf: bytes, at: int, end: int, what: str):
    """(type, offset, length) of each type-length record (action, instruction) from ``at`` to ``end``."""
    off = at
    while off + 4 <= end:
        rtype, rlen = struct.unpack_from("!HH", buf, off)
        if rlen < 8 or off + rlen > end:
            raise FlowModError(f"{what} at byte {off} has length {rlen}")
        yield rtype, off, rlen
        off += rlen


def _decode_actions_13(buf: bytes, at: int, end: int) -> list:
    actions = []
    for atype, off, _alen in _tlvs(buf, at, end, "action"):
        if atype == 0:
            port, max_len = struct.unpack_from("!IH", buf, off + 4)
            actions.append(("output", _reserved(port, OFP13), max_len))
        elif atype == 25:                         # SET_FIELD: one OXM
            (head,) = struct.unpack_from("!I", buf, off + 4)
            num, size = (head >> 9) & 0x7F, head & 0xFF
            name = OXM_FIELDS[num] if (head >> 16) == OXM_CLASS_BASIC and num < len(OXM_FIELDS) else f"oxm_{num}"
            actions.append(("set_field", name, int.from_bytes(buf[off + 8:off + 8 + size], "big")))
        elif atype == 17:
            actions.append(("push_vlan", struct.unpack_from("!H", buf, off + 4)[0]))
        elif atype == 18:
            actions.append(("pop_vlan",))
        elif atype == 22:
            actions.append(("group", struct.unpack_from("!I", buf, off + 4)[0]))
        elif atype == 21:
            actions.append(("set_queue", struct.unpack_from("!I", buf, off + 4)[0]))
        elif atype == 24:
            actions.append(("dec_nw_ttl",))
        else:
            actions.append(("other", atype))
    return actions


def _decode_instructions_13(buf: bytes, at: int) -> list:
    out = []
    for itype, off, ilen in _tlvs(buf, at, len(buf), "instruction"):
        if itype == 1:
            out.append(("goto", buf[off + 4]))
        elif itype == 2:
            out.append(("write_metadata",) + struct.unpack_from("!QQ", buf, off + 8))
        elif itype in (3, 4):
            out.append(("write" if itype == 3 else "apply", _decode_actions_13(buf, off + 8, off + ilen)))
        elif itype == 5:
            out.append(("clear",))
        elif itype == 6:
            out.append(("meter", struct.unpack_from("!I", buf, off + 4)[0]))
        else:
            out.append(("other", itype))
    return out


FLOW_MOD_13 = struct.Struct("!QQBBHHHIIIH2x")   # after the header: 40 bytes


FLOW_MOD_KEYS = ("cookie", "cookie_mask", "table_id", "command", "idle_timeout", "hard_timeout", "priority",
                 "buffer_id", "out_port", "out_group", "flags")


def _decode_flow_mod_13(frame: bytes) -> dict:
    if len(frame) < 56:
        raise FlowModError(f"OpenFlow 1.3 FLOW_MOD of {len(frame)} bytes is shorter than 56")
    fm = dict(zip(FLOW_MOD_KEYS, FLOW_MOD_13.unpack_from(frame, 8)))
    fm["out_port"] = _reserved(fm["out_port"], OFP13)
    match, inst_at = decode_oxm_match(frame, 48)
    fm.update(match=match, instructions=_decode_instructions_13(frame, inst_at),
              raw_match=bytes(frame[48:inst_at]), raw_instructions=bytes(frame[inst_at:]))
    return fm


# --------------------------------------------------------------------------- OpenFlow 1.0
MATCH_10 = struct.Struct("!IH6s6sHBxHBB2xIIHH")   # 40 bytes
FW_IN_PORT, FW_DL_VLAN, FW_DL_SRC, FW_DL_DST, FW_DL_TYPE, FW_NW_PROTO, FW_TP_SRC, FW_TP_DST = (1 << i for i in range(8))
FW_NW_SRC_SHIFT, FW_NW_DST_SHIFT = 8, 14
FW_DL_VLAN_PCP, FW_NW_TOS = 1 << 20, 1 << 21
VLAN_NONE_10 = 0xFFFF


def decode_match_10(buf: bytes, at: int) -> dict:
    """A 1.0 ``ofp_match`` (40 bytes at ``at``) in the common form: wildcarded fields are absent."""
    (wc, in_port, dl_src, dl_dst, dl_vlan, dl_vlan_pcp, dl_type, nw_tos, nw_proto, nw_src, nw_dst,
     tp_src, tp_dst) = MATCH_10.unpack_from(buf, at)
    m = {}
    if not wc & FW_IN_PORT:
        m["in_port"] = _field("in_port", _reserved(in_port, OFP10))
    if not wc & FW_DL_SRC:
        m["eth_src"] = _field("eth_src", int.from_bytes(dl_src, "big"))
    if not wc & FW_DL_DST:
        m["eth_dst"] = _field("eth_dst", int.from_bytes(dl_dst, "big"))
    if not wc & FW_DL_VLAN:
        m["vlan_vid"] = _field("vlan_vid", 0 if dl_vlan == VLAN_NONE_10 else VID_PRESENT | (dl_vlan & 0xFFF))
    if not wc & FW_DL_VLAN_PCP:
        m["vlan_pcp"] = _field("vlan_pcp", dl_vlan_pcp)
    is_arp = not wc & FW_DL_TYPE and dl_type == 0x0806
    if not wc & FW_DL_TYPE:
        m["eth_type"] = _field("eth_type", dl_type)
    if not wc & FW_NW_TOS:
        m["ip_dscp"] = _field("ip_dscp", nw_tos >> 2)
    if not wc & FW_NW_PROTO:
        m["arp_op" if is_arp else "ip_proto"] = _field("arp_op" if is_arp else "ip_proto", nw_proto)
    for shift, value, ip_name, arp_name in ((FW_NW_SRC_SHIFT, nw_src, "ipv4_src", "arp_spa"),
                                            (FW_NW_DST_SHIFT, nw_dst, "ipv4_dst", "arp_tpa")):
        bits = (wc >> shift) & 0x3F
        if bits < 32:
            m[arp_name if is_arp else ip_name] = _field(ip_name, value, (0xFFFFFFFF << bits) & 0xFFFFFFFF)
    _match_10_transport(m, wc, None if wc & FW_NW_PROTO else nw_proto, tp_src, tp_dst)
    return m


_TP_NAMES_10 = {6: ("tcp_src", "tcp_dst"), 17: ("udp_src", "udp_dst"), 132: ("sctp_src", "sctp_dst"),
                1: ("icmpv4_type", "icmpv4_code")}


def _match_10_transport(m: dict, wc: int, proto, tp_src: int, tp_dst: int) -> None:
    """A 1.0 match's tp_src and tp_dst into ``m``, named by the IP protocol it matches (tp_* when none)."""
    names = _TP_NAMES_10.get(proto, ("tp_src", "tp_dst"))
    if not wc & FW_TP_SRC:
        m[names[0]] = _field(names[0], tp_src)
    if not wc & FW_TP_DST:
        m[names[1]] = _field(names[1], tp_dst)


_SET_10 = {4: ("eth_src", "6s"), 5: ("eth_dst", "6s"), 6: ("ipv4_src", "I"), 7: ("ipv4_dst", "I"),
           8: ("ip_dscp", "B"), 9: ("tp_src", "H"), 10: ("tp_dst", "H"), 2: ("vlan_pcp", "B")}


def _decode_actions_10(buf: bytes, at: int, end: int) -> list:
    actions = []
    for atype, off, _alen in _tlvs(buf, at, end, "action"):
        if atype == 0:
            port, max_len = struct.unpack_from("!HH", buf, off + 4)
            actions.append(("output", _reserved(port, OFP10), max_len))
        elif atype == 1:
            (vid,) = struct.unpack_from("!H", buf, off + 4)
            actions.append(("set_field", "vlan_vid", VID_PRESENT | (vid & 0xFFF)))
        elif atype == 3:
            actions.append(("pop_vlan",))
        elif atype in _SET_10:
            name, fmt = _SET_10[atype]
            (value,) = struct.unpack_from("!" + fmt, buf, off + 4)
            if isinstance(value, bytes):
                value = int.from_bytes(value, "big")
            actions.append(("set_field", name, value >> 2 if name == "ip_dscp" else value))
        elif atype == 11:
            port, _pad, queue = struct.unpack_from("!H6sI", buf, off + 4)
            actions.extend([("set_queue", queue), ("output", _reserved(port, OFP10), 0)])
        else:
            actions.append(("other", atype))
    return actions


FLOW_MOD_10 = struct.Struct("!QHHHHIHH")   # after the match: 24 bytes


def _decode_flow_mod_10(frame: bytes) -> dict:
    if len(frame) < 72:
        raise FlowModError(f"OpenFlow 1.0 FLOW_MOD of {len(frame)} bytes is shorter than 72")
    cookie, command, idle, hard, priority, buffer_id, out_port, flags = FLOW_MOD_10.unpack_from(frame, 48)
    fm = dict(zip(FLOW_MOD_KEYS, (cookie, 0, 0, command, idle, hard, priority, buffer_id,
                                  _reserved(out_port, OFP10), OFPG_ANY, flags & ~FF_RESET_COUNTS)))
    fm.update(match=decode_match_10(frame, 8), instructions=[("apply", _decode_actions_10(frame, 72, len(frame)))],
              raw_match=bytes(frame[8:48]), raw_instructions=bytes(frame[72:]))
    return fm


def decode_flow_mod(frame: bytes) -> dict:
    """A whole FLOW_MOD message (header included) in the common form described above."""
    version = frame[0]
    if frame[1] != codec.FLOW_MOD:
        raise FlowModError(f"message type {frame[1]} is not FLOW_MOD ({codec.FLOW_MOD})")
    if version == OFP10:
        return _decode_flow_mod_10(frame)
    if version == OFP13:
        return _decode_flow_mod_13(frame)
    raise FlowModError(f"FLOW_MOD of OpenFlow version {version:#x} is not supported")


# --------------------------------------------------------------------------- controller -> switch (tools)
def encode_oxm_match(match: dict) -> bytes:
    """An OXM ``ofp_match`` (padded to 8 bytes) from ``{name: value}`` or ``{name: (value, mask)}``."""
    body = b""
    for name, spec in match.items():
        if name not in OXM_NUMBER:
            raise ValueError(f"unknown match field {name!r}")
        value, mask = spec if isinstance(spec, tuple) else (spec, None)
        size = (FIELD_BITS[name] + 7) // 8
        has_mask = mask is not None and mask != full_mask(name)
        head = ((OXM_CLASS_BASIC << 16) | (OXM_NUMBER[name] << 9) | (int(has_mask) << 8)
                | (size * (2 if has_mask else 1)))
        body += struct.pack("!I", head) + value.to_bytes(size, "big")
        if has_mask:
            body += mask.to_bytes(size, "big")
    m = struct.pack("!HH", 1, 4 + len(body)) + body
    return m + bytes(-len(m) % 8)


def encode_flow_mod_13(xid: int, match: dict, out_ports=(), priority: int = 1, command: int = ADD,
                       table_id: int = 0, idle_timeout: int = 0, hard_timeout: int = 0, flags: int = 0,
                       cookie: int = 0) -> bytes:
    """A 1.3 FLOW_MOD whose one APPLY_ACTIONS instruction outputs to ``out_ports`` (reserved ports
    as ``codec.PORT_*``).  For the emulator's own measurements and the null controller, not the
    data plane's hot path."""
    actions = b"".join(struct.pack("!HHIH6x", 0, 16, p | 0xFFFF0000 if p >= codec.PORT_IN_PORT else p, 0xFFFF)
                       for p in out_ports)
    inst = struct.pack("!HH4x", 4, 8 + len(actions)) + actions if actions else b""
    body = FLOW_MOD_13.pack(cookie, 0, table_id, command, idle_timeout, hard_timeout, priority, codec.NO_BUFFER,
                            0xFFFFFFFF, OFPG_ANY, flags) + encode_oxm_match(match) + inst
    return codec._message(OFP13, codec.FLOW_MOD, xid, body)


# --------------------------------------------------------------------------- switch -> controller
def encode_flow_removed(version: int, xid: int, entry, reason: int, duration_ns: int) -> bytes:
    """FLOW_REMOVED for ``entry`` (anything with cookie, priority, table_id, idle/hard timeouts,
    packet/byte counts and ``raw_match``)."""
    sec, nsec = divmod(max(0, duration_ns), 1_000_000_000)
    if version == OFP10:
        body = (entry.raw_match + struct.pack("!QHBxIIH2xQQ", entry.cookie, entry.priority, reason, sec, nsec,
                                              entry.idle_timeout, entry.packet_count, entry.byte_count))
    else:
        body = struct.pack("!QHBBIIHHQQ", entry.cookie, entry.priority, reason, entry.table_id, sec, nsec,
                           entry.idle_timeout, entry.hard_timeout, entry.packet_count,
                           entry.byte_count) + entry.raw_match
    return codec._message(version, codec.FLOW_REMOVED, xid, body)


OFPMP_FLOW = 1


def encode_flow_stats(version: int, entries: Iterable, now_ns: int) -> list[bytes]:
    """The ``ofp_flow_stats`` records of ``entries`` (for a FLOW stats / multipart reply)."""
    out = []
    for e in entries:
        sec, nsec = divmod(max(0, now_ns - e.installed_ns), 1_000_000_000)
        if version == OFP10:
            tail = struct.pack("!IIHHH6xQQQ", sec, nsec, e.priority, e.idle_timeout, e.hard_timeout, e.cookie,
                               e.packet_count, e.byte_count) + e.raw_instructions
            length = 4 + len(e.raw_match) + len(tail)
            out.append(struct.pack("!HBx", length, e.table_id) + e.raw_match + tail)
        else:
            head = struct.pack("!IIHHHH4xQQQ", sec, nsec, e.priority, e.idle_timeout, e.hard_timeout, e.flags,
                               e.cookie, e.packet_count, e.byte_count)
            length = 4 + len(head) + len(e.raw_match) + len(e.raw_instructions)
            out.append(struct.pack("!HBx", length, e.table_id) + head + e.raw_match + e.raw_instructions)
    return out


def encode_flow_stats_replies(version: int, xid: int, records: list[bytes]) -> list[bytes]:
    """One or more stats (1.0) / multipart (1.3) replies of type FLOW carrying ``records``, split
    with the REPLY_MORE flag so that no message passes 64 KiB."""
    room = codec.MAX_MESSAGE_LEN - codec.HEADER_LEN - 8
    parts, cur, size = [], [], 0
    for r in records:
        if cur and size + len(r) > room:
            parts.append(cur)
            cur, size = [], 0
        cur.append(r)
        size += len(r)
    parts.append(cur)
    return [codec._stats_reply(version, xid, OFPMP_FLOW, b"".join(p), more=i < len(parts) - 1)
            for i, p in enumerate(parts)]


def decode_flow_stats_request(frame: bytes) -> dict:
    """A FLOW stats request's filter: table_id, out_port, out_group, cookie, cookie_mask, match."""
    version = frame[0]
    if version == OFP10:
        match = decode_match_10(frame, 12)
        table_id, out_port = struct.unpack_from("!BxH", frame, 52)
        return {"table_id": table_id, "out_port": _reserved(out_port, OFP10), "out_group": OFPG_ANY,
                "cookie": 0, "cookie_mask": 0, "match": match}
    table_id, out_port, out_group, cookie, cookie_mask = struct.unpack_from("!B3xII4xQQ", frame, 16)
    match, _ = decode_oxm_match(frame, 48)
    return {"table_id": table_id, "out_port": _reserved(out_port, OFP13), "out_group": out_group,
            "cookie": cookie, "cookie_mask": cookie_mask, "match": match}
