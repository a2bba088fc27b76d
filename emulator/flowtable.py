"""Flow tables of an emulated switch: pure, no I/O, the clock passed in.

A FLOW_MOD decoded by :mod:`emulator.flowcodec` is applied with OpenFlow's semantics:

* ADD replaces an entry with the same match and priority (counters cleared); with CHECK_OVERLAP
  it fails when an entry of the same priority could match the same frame; a full table fails.
* MODIFY / MODIFY_STRICT change the instructions of the matching entries (counters kept unless
  RESET_COUNTS); with none matching, OpenFlow 1.0 adds the entry, 1.3 does nothing.
* DELETE / DELETE_STRICT remove them, filtered by out_port, out_group and cookie/mask; entries
  with SEND_FLOW_REM are reported so the switch can send FLOW_REMOVED.
* idle and hard timeouts expire entries when :meth:`Pipeline.expire` is called.

Lookup is a tuple-space search: entries are grouped by (priority, the fields and masks they
match), each group a dict keyed by the masked values, the groups visited from the highest
priority down.  A frame costs one dict probe per group, however many entries there are, so a
table of 100k learned hosts is as fast as a table of ten.

:func:`packet_fields` reads the header fields of an Ethernet frame in the same form as matches
(ints, 1.3 VLAN convention), and :meth:`Pipeline.process` runs a frame through the tables
(apply / write / clear actions, write-metadata, goto-table) to the outputs it leaves by.  An output to
CONTROLLER carries what OpenFlow 1.3's PACKET_IN reports: the reason (NO_MATCH for a table-miss entry,
ACTION otherwise), the id of the table that was looked up and the cookie of the entry whose action sent it
(:data:`NO_COOKIE`, all ones, when no one entry did: the action set, or a miss sent up by the ``controller``
policy).  Controllers that own several applications' entries by cookie (Faucet) drop a PACKET_IN whose
cookie is not theirs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

from . import codec
from . import flowcodec as fc
from .params import TABLE_MISS

ETH_VLAN, ETH_IPV4, ETH_ARP, ETH_IPV6 = 0x8100, 0x0800, 0x0806, 0x86DD
IP_L4_PORTS = {6: ("tcp_src", "tcp_dst"), 17: ("udp_src", "udp_dst"), 132: ("sctp_src", "sctp_dst")}

# OFPET_FLOW_MOD_FAILED codes (1.3; 1.0 has ALL_TABLES_FULL 0 and OVERLAP 1 under the same type 3).
OFPET_FLOW_MOD_FAILED = {codec.OFP10: 3, codec.OFP13: 5}
FMF_TABLE_FULL = {codec.OFP10: 0, codec.OFP13: 1}
FMF_BAD_TABLE_ID = {codec.OFP10: 4, codec.OFP13: 2}     # 1.0: UNSUPPORTED (no table ids there)
FMF_OVERLAP = {codec.OFP10: 1, codec.OFP13: 3}
FMF_BAD_COMMAND = {codec.OFP10: 3, codec.OFP13: 6}

NO_COOKIE = 0xFFFF_FFFF_FFFF_FFFF     # a PACKET_IN no single flow entry caused (OpenFlow 1.3: -1)

_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")


def packet_fields(frame: bytes, in_port: int) -> dict:
    """The match fields of an Ethernet frame arriving at ``in_port``."""
    n = len(frame)
    if n < 14:
        return {"in_port": in_port}
    f = {"in_port": in_port, "eth_dst": int.from_bytes(frame[0:6], "big"),
         "eth_src": int.from_bytes(frame[6:12], "big")}
    (etype,) = _U16.unpack_from(frame, 12)
    l3 = 14
    if etype == ETH_VLAN and n >= 18:
        (tci,) = _U16.unpack_from(frame, 14)
        f["vlan_vid"] = fc.VID_PRESENT | (tci & 0xFFF)
        f["vlan_pcp"] = tci >> 13
        (etype,) = _U16.unpack_from(frame, 16)
        l3 = 18
    else:
        f["vlan_vid"] = 0
    f["eth_type"] = etype
    if etype == ETH_IPV4 and n >= l3 + 20:
        ihl = (frame[l3] & 0x0F) * 4
        tos, proto = frame[l3 + 1], frame[l3 + 9]
        f["ip_dscp"], f["ip_ecn"], f["ip_proto"] = tos >> 2, tos & 3, proto
        f["ipv4_src"], f["ipv4_dst"] = _U32.unpack_from(frame, l3 + 12)[0], _U32.unpack_from(frame, l3 + 16)[0]
        l4 = l3 + ihl
        fragment = _U16.unpack_from(frame, l3 + 6)[0] & 0x1FFF
        if not fragment and n >= l4 + 4:
            _l4_fields(f, proto, frame, l4)
    elif etype == ETH_ARP and n >= l3 + 28:
        f["arp_op"] = _U16.unpack_from(frame, l3 + 6)[0]
        f["arp_sha"] = int.from_bytes(frame[l3 + 8:l3 + 14], "big")
        f["arp_spa"] = _U32.unpack_from(frame, l3 + 14)[0]
        f["arp_tha"] = int.from_bytes(frame[l3 + 18:l3 + 24], "big")
        f["arp_tpa"] = _U32.unpack_from(frame, l3 + 24)[0]
    elif etype == ETH_IPV6 and n >= l3 + 40:
        proto = frame[l3 + 6]
        f["ip_proto"] = proto
        f["ip_dscp"] = ((frame[l3] & 0x0F) << 2) | (frame[l3 + 1] >> 6)
        f["ipv6_src"] = int.from_bytes(frame[l3 + 8:l3 + 24], "big")
        f["ipv6_dst"] = int.from_bytes(frame[l3 + 24:l3 + 40], "big")
        if n >= l3 + 44:
            _l4_fields(f, proto, frame, l3 + 40, icmp=58)
    return f


def _l4_fields(f: dict, proto: int, frame: bytes, l4: int, icmp: int = 1) -> None:
    names = IP_L4_PORTS.get(proto)
    if names is not None:
        f[names[0]] = f["tp_src"] = _U16.unpack_from(frame, l4)[0]
        f[names[1]] = f["tp_dst"] = _U16.unpack_from(frame, l4 + 2)[0]
    elif proto == icmp:
        prefix = "icmpv4" if icmp == 1 else "icmpv6"
        f[prefix + "_type"], f[prefix + "_code"] = frame[l4], frame[l4 + 1]


def signature(match: dict) -> tuple:
    return tuple(sorted((name, mask) for name, (_value, mask) in match.items()))


@dataclass(eq=False)
class FlowEntry:
    table_id: int
    priority: int
    match: dict
    instructions: list
    cookie: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0
    flags: int = 0
    raw_match: bytes = b""
    raw_instructions: bytes = b""
    installed_ns: int = 0
    last_hit_ns: int = 0
    packet_count: int = 0
    byte_count: int = 0
    sig: tuple = field(default=(), repr=False)
    key: tuple = field(default=(), repr=False)

    @property
    def table_miss(self) -> bool:
        return self.priority == 0 and not self.match

    def outputs_to(self, port: int) -> bool:
        return any(a[0] == "output" and a[1] == port for i in self.instructions if i[0] in ("apply", "write")
                   for a in i[1])

    def groups_to(self, group: int) -> bool:
        return any(a[0] == "group" and a[1] == group for i in self.instructions if i[0] in ("apply", "write")
                   for a in i[1])


def _covers(entry_match: dict, filter_match: dict) -> bool:
    """Non-strict: the entry is at least as specific as the filter on every field the filter names."""
    for name, (value, mask) in filter_match.items():
        got = entry_match.get(name)
        if got is None or got[1] & mask != mask or got[0] & mask != value:
            return False
    return True


def _overlaps(a: dict, b: dict) -> bool:
    """Some frame could match both."""
    for name in a.keys() & b.keys():
        (va, ma), (vb, mb) = a[name], b[name]
        if (va ^ vb) & ma & mb:
            return False
    return True


class FlowModFailed(Exception):
    """A FLOW_MOD the table refuses: ``code`` is the OpenFlow FLOW_MOD_FAILED reason name."""

    def __init__(self, code: str, detail: str):
        super().__init__(f"{code}: {detail}")
        self.code = code


class FlowTable:
    def __init__(self, table_id: int = 0, capacity: Optional[int] = None):
        self.table_id = table_id
        self.capacity = capacity
        self.groups: dict = {}        # (priority, signature) -> {key: entry}
        self._order: list = []        # [(priority, names, masks, bucket)], highest priority first
        self.count = 0
        self.lookups = 0
        self.matched = 0

    def _reorder(self) -> None:
        self._order = [(p, tuple(n for n, _ in sig), tuple(m for _, m in sig), bucket)
                       for (p, sig), bucket in sorted(self.groups.items(), key=lambda kv: -kv[0][0])]

    def entries(self):
        for bucket in self.groups.values():
            yield from bucket.values()

    def find_exact(self, match: dict, priority: int) -> Optional[FlowEntry]:
        sig = signature(match)
        bucket = self.groups.get((priority, sig))
        return None if bucket is None else bucket.get(tuple(match[n][0] for n, _ in sig))

    def insert(self, entry: FlowEntry) -> Optional[FlowEntry]:
        """Put ``entry`` in; the entry it replaced (same match and priority), if any."""
        entry.sig = signature(entry.match)
        entry.key = tuple(entry.match[n][0] for n, _ in entry.sig)
        gk = (entry.priority, entry.sig)
        bucket = self.groups.get(gk)
        if bucket is None:
            bucket = self.groups[gk] = {}
            self._reorder()
        old = bucket.get(entry.key)
        if old is None and self.capacity is not None and self.count >= self.capacity:
            if not bucket:
                del self.groups[gk]
                self._reorder()
            raise FlowModFailed("TABLE_FULL", f"table {self.table_id} holds {self.count} entries, its capacity")
        bucket[entry.key] = entry
        if old is None:
            self.count += 1
        return old

    def remove(self, entry: FlowEntry) -> None:
        gk = (entry.priority, entry.sig)
        bucket = self.groups.get(gk)
        if bucket is not None and bucket.get(entry.key) is entry:
            del bucket[entry.key]
            self.count -= 1
            if not bucket:
                del self.groups[gk]
                self._reorder()

    def lookup(self, fields: dict) -> Optional[FlowEntry]:
        self.lookups += 1
        for _prio, names, masks, bucket in self._order:
            try:
                key = tuple([fields[n] & m for n, m in zip(names, masks)])
            except KeyError:
                continue
            e = bucket.get(key)
            if e is not None:
                self.matched += 1
                return e
        return None

    def select(self, fm: dict, strict: bool) -> list:
        """The entries a MODIFY/DELETE (or a flow stats request) names."""
        if strict:
            e = self.find_exact(fm["match"], fm["priority"])
            found = [e] if e is not None else []
        else:
            found = [e for e in self.entries() if _covers(e.match, fm["match"])]
        out_port, out_group = fm.get("out_port", fc.PORT_ANY), fm.get("out_group", fc.OFPG_ANY)
        cmask = fm.get("cookie_mask", 0)
        return [e for e in found
                if (out_port == fc.PORT_ANY or e.outputs_to(out_port))
                and (out_group == fc.OFPG_ANY or e.groups_to(out_group))
                and (not cmask or (e.cookie & cmask) == (fm["cookie"] & cmask))]


class Pipeline:
    """A switch's flow tables and what happens on a miss.

    ``miss`` decides a frame that matches no entry in a table: ``"controller"`` sends it up as a
    PACKET_IN (NO_MATCH), as OpenFlow 1.0 switches and cbench-style emulators do; ``"drop"``
    drops it, as the proactive benchmarks require; ``"table"`` follows only the controller's own
    entries (a 1.3 table-miss entry if it installed one), as the OpenFlow 1.3 specification says."""

    MISS_POLICIES = TABLE_MISS

    def __init__(self, version: int, capacity: Optional[int] = None, miss: str = "controller", n_tables: int = 254):
        if miss not in self.MISS_POLICIES:
            raise ValueError(f"table-miss policy {miss!r}: choose one of {', '.join(self.MISS_POLICIES)}")
        self.version = version
        self.capacity = capacity
        self.miss = miss
        self.n_tables = 1 if version == codec.OFP10 else n_tables
        self.tables: dict = {}
        self.flow_mods = 0
        self.removed_pending: list = []        # (entry, reason) with SEND_FLOW_REM, for FLOW_REMOVED
        self.uses_metadata = False             # an entry matched or wrote metadata: frames carry the register

    def table(self, table_id: int) -> FlowTable:
        t = self.tables.get(table_id)
        if t is None:
            if table_id >= self.n_tables:
                raise FlowModFailed("BAD_TABLE_ID", f"table {table_id}: this switch has tables 0..{self.n_tables - 1}")
            t = self.tables[table_id] = FlowTable(table_id, self.capacity)
        return t

    @property
    def count(self) -> int:
        return sum(t.count for t in self.tables.values())

    def _tables(self, table_id: int) -> list:
        """The tables ``table_id`` names (all of them for OFPTT_ALL), in table order."""
        return [self.tables[t] for t in sorted(self.tables) if table_id in (fc.OFPTT_ALL, t)]

    def entries(self, table_id: int = fc.OFPTT_ALL):
        for t in self._tables(table_id):
            yield from t.entries()

    def select(self, fm: dict, strict: bool = False) -> list:
        """The entries of the tables ``fm["table_id"]`` names that a DELETE (or a flow stats request) picks."""
        return [e for t in self._tables(fm["table_id"]) for e in t.select(fm, strict)]

    # ------------------------------------------------------------------ FLOW_MOD
    def flow_mod(self, fm: dict, now_ns: int) -> dict:
        """Apply a decoded FLOW_MOD; what changed.  Raises :class:`FlowModFailed` on refusal."""
        self.flow_mods += 1
        cmd = fm["command"]
        if not self.uses_metadata and cmd in (fc.ADD, fc.MODIFY, fc.MODIFY_STRICT) and (
                "metadata" in fm["match"] or any(i[0] == "write_metadata" for i in fm["instructions"])):
            self.uses_metadata = True
        if cmd == fc.ADD:
            return {"added": [self._add(fm, now_ns)]}
        if cmd in (fc.MODIFY, fc.MODIFY_STRICT):
            changed = []
            for e in self.table(fm["table_id"]).select({**fm, "out_port": fc.PORT_ANY, "out_group": fc.OFPG_ANY},
                                                       strict=cmd == fc.MODIFY_STRICT):
                e.instructions, e.raw_instructions = fm["instructions"], fm["raw_instructions"]
                if fm["flags"] & fc.FF_RESET_COUNTS and self.version != codec.OFP10:
                    e.packet_count = e.byte_count = 0
                changed.append(e)
            if not changed and self.version == codec.OFP10:
                return {"added": [self._add(fm, now_ns)]}
            return {"modified": changed}
        if cmd in (fc.DELETE, fc.DELETE_STRICT):
            if fm["table_id"] != fc.OFPTT_ALL:
                self.table(fm["table_id"])              # a table this switch lacks: BAD_TABLE_ID
            removed = self.select(fm, strict=cmd == fc.DELETE_STRICT)
            for e in removed:
                self.tables[e.table_id].remove(e)
                if e.flags & fc.FF_SEND_FLOW_REM:
                    self.removed_pending.append((e, fc.RR_DELETE))
            return {"removed": removed}
        raise FlowModFailed("BAD_COMMAND", f"FLOW_MOD command {cmd}")

    def _add(self, fm: dict, now_ns: int) -> FlowEntry:
        t = self.table(fm["table_id"])
        if fm["flags"] & fc.FF_CHECK_OVERLAP:
            for e in t.entries():
                if e.priority == fm["priority"] and e.match != fm["match"] and _overlaps(e.match, fm["match"]):
                    raise FlowModFailed("OVERLAP", f"overlaps an entry of priority {e.priority}")
        entry = FlowEntry(t.table_id, fm["priority"], fm["match"], fm["instructions"], fm["cookie"],
                          fm["idle_timeout"], fm["hard_timeout"], fm["flags"], fm["raw_match"],
                          fm["raw_instructions"], now_ns, now_ns)
        t.insert(entry)
        return entry

    # ------------------------------------------------------------------ time
    def expire(self, now_ns: int) -> list:
        """Remove the entries whose idle or hard timeout has passed; [(entry, reason)]."""
        gone = []
        for t in self.tables.values():
            for e in [e for e in t.entries() if e.idle_timeout or e.hard_timeout]:
                if e.hard_timeout and now_ns - e.installed_ns >= e.hard_timeout * 1_000_000_000:
                    gone.append((e, fc.RR_HARD_TIMEOUT))
                elif e.idle_timeout and now_ns - e.last_hit_ns >= e.idle_timeout * 1_000_000_000:
                    gone.append((e, fc.RR_IDLE_TIMEOUT))
        for e, reason in gone:
            self.tables[e.table_id].remove(e)
            if e.flags & fc.FF_SEND_FLOW_REM:
                self.removed_pending.append((e, reason))
        return gone

    # ------------------------------------------------------------------ frames
    def process(self, frame: bytes, in_port: int, now_ns: int) -> list:
        """Run ``frame`` through the tables: ``[(port, max_len, frame, reason, table_id, cookie)]`` in the order
        the frame leaves.  ``port`` may be a reserved ``codec.PORT_*``; for CONTROLLER, ``reason`` is the
        PACKET_IN reason (0 NO_MATCH for a miss or a table-miss entry, 1 ACTION), ``table_id`` the table looked
        up last and ``cookie`` the cookie of the entry whose apply-actions sent it (:data:`NO_COOKIE` for the
        action set and for a miss).  The metadata register starts at 0 and follows write-metadata."""
        fields = packet_fields(frame, in_port)
        if self.uses_metadata:
            fields["metadata"] = 0
        out, action_set = [], {}
        table_id = 0
        while True:
            t = self.tables.get(table_id)
            e = t.lookup(fields) if t is not None else None
            if e is None:
                if self.miss == "controller":
                    out.append((codec.PORT_CONTROLLER, 0xFFFF, frame, 0, table_id, NO_COOKIE))
                return out
            e.packet_count += 1
            e.byte_count += len(frame)
            e.last_hit_ns = now_ns
            reason = 0 if e.table_miss and self.version != codec.OFP10 else 1
            frame, goto = self._instructions(e, frame, fields, out, action_set, reason, table_id)
            if goto is None or goto <= table_id:
                break
            table_id = goto
        if action_set:
            ordered = [a for k, a in action_set.items() if k != "output"]
            if "output" in action_set:
                ordered.append(action_set["output"])
            self._act(ordered, frame, fields, out, reason, table_id, NO_COOKIE)
        return out

    def _instructions(self, e, frame: bytes, fields: dict, out: list, action_set: dict, reason: int,
                      table_id: int) -> tuple:
        """Carry out entry ``e``'s instructions on ``frame``: (the frame as apply-actions left it, the table its
        goto names or None)."""
        goto = None
        for inst in e.instructions:
            kind = inst[0]
            if kind == "apply":
                frame = self._act(inst[1], frame, fields, out, reason, table_id, e.cookie)
            elif kind == "write":
                for a in inst[1]:
                    action_set[a[0] if a[0] != "set_field" else ("set_field", a[1])] = a
            elif kind == "clear":
                action_set.clear()
            elif kind == "write_metadata":
                mask = inst[2]
                fields["metadata"] = (fields.get("metadata", 0) & ~mask) | (inst[1] & mask)
            elif kind == "goto":
                goto = inst[1]
        return frame, goto

    def _act(self, actions, frame: bytes, fields: dict, out: list, reason: int, table_id: int = 0,
             cookie: int = NO_COOKIE) -> bytes:
        for a in actions:
            kind = a[0]
            if kind == "output":
                out.append((a[1], a[2], frame, reason, table_id, cookie))
            elif kind == "set_field":
                frame = rewrite(frame, a[1], a[2], fields)
            elif kind == "pop_vlan":
                if len(frame) >= 18 and frame[12:14] == b"\x81\x00":
                    frame = frame[:12] + frame[16:]
                    tagged = len(frame) >= 18 and frame[12:14] == b"\x81\x00"      # the inner tag, if any
                    fields["vlan_vid"] = fc.VID_PRESENT | (_U16.unpack_from(frame, 14)[0] & 0xFFF) if tagged else 0
            elif kind == "push_vlan":
                # The new outer tag copies the VID and PCP of the tag it covers, else both are 0 (OpenFlow 1.3).
                tci = frame[14:16] if len(frame) >= 18 and frame[12:14] in (b"\x81\x00", b"\x88\xa8") else b"\x00\x00"
                frame = frame[:12] + _U16.pack(a[1]) + tci + frame[12:]
                fields["vlan_vid"] = fc.VID_PRESENT | (_U16.unpack(tci)[0] & 0xFFF)
        return frame


def rewrite(frame: bytes, name: str, value: int, fields: dict) -> bytes:
    """A frame with one header field set (Ethernet addresses and the VLAN id; other fields are
    only reflected in the match fields, the bytes left as they are)."""
    fields[name] = value
    if name == "eth_dst":
        return value.to_bytes(6, "big") + frame[6:]
    if name == "eth_src":
        return frame[:6] + value.to_bytes(6, "big") + frame[12:]
    if name == "vlan_vid" and len(frame) >= 16 and frame[12:14] == b"\x81\x00":
        tci = (_U16.unpack_from(frame, 14)[0] & 0xF000) | (value & 0xFFF)
        return frame[:14] + _U16.pack(tci) + frame[16:]
    return frame
