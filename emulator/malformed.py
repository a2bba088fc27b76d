"""The robustness screen's catalogue: malformed or abnormal switch-to-controller messages, as data.

Each :class:`Kind` is one record: its id and class (the outline of ``docs/benchmarks/
malformed_message_handling.md``, after the research catalogue), the OpenFlow versions it applies to,
the stage of the session where it is sent, how its bytes are made, the ideal reaction, the outcomes
that pass, and its hazard.  The bytes are made from the struct templates of :mod:`emulator.marked` once per
(kind, version) (:func:`payload` is cached), never per send.

Every injected message that names a datapath frame carries the marker source MAC :data:`MARK_MAC`
and the buffer id :data:`MARK_BUFFER`, and its xid is :data:`MARK_XID`, so what the controller does
with it can be told apart from what it does for the sentinel: an ERROR echoing MARK_XID answers the
kind; a PACKET_OUT or FLOW_MOD naming MARK_BUFFER or MARK_MAC acted on it.

Outcomes (decided by :func:`classify` from what the emulator saw, nothing from inside the controller):
CONFORMANT, TOLERANT, CLOSED, SIDE-EFFECT, COLLATERAL, HANG, CRASH, in rising severity.

Pure: standard library, :mod:`emulator.codec`, :mod:`emulator.marked` and the fuzzer's cases (:mod:`emulator.fuzz`)
only (both the shard and the harness import it).
"""

from __future__ import annotations

import functools
import random
import struct
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import codec, fuzz
from .codec import OFP10, OFP13
from .marked import (  # noqa: F401  (re-exported: the catalogue's builders, used by the screen and the tests)
    IN_PORT_1,
    MARK_BUFFER,
    MARK_MAC,
    MARK_XID,
    apply_actions,
    arp_frame,
    bitmap_element,
    bucket,
    drip,
    error,
    experimenter,
    flow_removed,
    flow_stats,
    flow_stats_10,
    flow_stats_13,
    group_desc,
    hdr,
    hello13,
    match13,
    msg,
    multipart_reply,
    other,
    output_action,
    oxm,
    packet_in,
    pin,
    port,
    port_status,
    queue_config_reply,
    seeded_bytes,
)
from .percentile import percentile

# --------------------------------------------------------------------------- outcomes

CONFORMANT, TOLERANT, CLOSED, SIDE_EFFECT, COLLATERAL, HANG, CRASH = (
    "CONFORMANT", "TOLERANT", "CLOSED", "SIDE-EFFECT", "COLLATERAL", "HANG", "CRASH")
OUTCOMES = (CONFORMANT, TOLERANT, CLOSED, SIDE_EFFECT, COLLATERAL, HANG, CRASH)   # by rising severity
NOT_SCREENED = "NOT-SCREENED"     # the kind could not be sent (the controller was already down)

CLASSES = {
    "A": "framing / length", "B": "version", "C": "type", "D": "session / handshake state",
    "E": "PACKET_IN fields", "F": "other switch messages", "G": "failure notifications (ERROR)",
    "H": "OXM / match TLVs", "I": "action / instruction / bucket lists", "J": "multipart replies",
    "K": "HELLO elements, experimenter", "L": "delivery anomalies",
}
FUZZ_CLASS = "Z"      # the fuzzer's cases (emulator/fuzz.py), not a catalogue class

# Stages: where in the probe session the kind's bytes go.
SESSION = "session"          # after the handshake (the default)
HELLO_STAGE = "hello"        # in place of the probe's HELLO
PRE_HELLO = "pre-hello"      # before any HELLO; the probe never sends one
SILENT = "silent"            # TCP only: the probe sends nothing at all
NO_FEATURES = "no-features"  # HELLO, then the FEATURES_REQUEST is never answered
FEATURES = "features"        # the kind's bytes answer the FEATURES_REQUEST (its xid patched in)
EARLY = "early"              # right after the controller's HELLO, before the FEATURES_REPLY
DUPLICATE = "duplicate"      # a second session with the probe's datapath id
MUTE_ECHO = "mute-echo"      # after the handshake the probe answers no ECHO_REQUEST
ERROR_EVERY = "error-every"  # the probe answers every FLOW_MOD/PACKET_OUT with an ERROR
STAGES = (SESSION, HELLO_STAGE, PRE_HELLO, SILENT, NO_FEATURES, FEATURES, EARLY, DUPLICATE, MUTE_ECHO, ERROR_EVERY)

# Ideal reactions when the ideal is not an ERROR.
DISCARD, PROCESS, HANDSHAKE, CLOSE = "discard", "process", "handshake", "close"

ACTS = ("packet_out", "flow_mod")

# OpenFlow error types and codes the catalogue names (OpenFlow 1.3 numbering; 1.0 agrees for these).
HELLO_FAILED, INCOMPATIBLE = 0, 0
BAD_REQUEST = 1
BAD_VERSION, BAD_TYPE, BAD_MULTIPART, BAD_EXPERIMENTER, BAD_LEN = 0, 1, 2, 3, 6
BAD_ACTION, BAD_INSTRUCTION, BAD_MATCH = 2, 3, 4
BAD_MATCH_TYPE, BAD_MATCH_LEN, BAD_FIELD, BAD_VALUE, BAD_MASK, BAD_PREREQ, DUP_FIELD = 0, 1, 6, 7, 8, 9, 10
BAD_ACTION_LEN = 1
BAD_INST_LEN = 7
UNKNOWN_INST = 0
GROUP_MOD_FAILED, BAD_BUCKET = 6, 12
TABLE_FEATURES_FAILED, TF_BAD_LEN = 13, 3


@dataclass(frozen=True)
class Kind:
    """One malformed or abnormal message kind (a catalogue record)."""
    id: str
    title: str
    build: Callable[[int], object] = field(repr=False, compare=False)
    versions: tuple = (OFP10, OFP13)
    stage: str = SESSION
    ideal: str = "discard it"
    error: Optional[tuple] = None      # the spec's ERROR (type, code): seeing it, xid echoed, is CONFORMANT
    react: str = DISCARD               # the conformant reaction where no ERROR is ideal
    close_ok: bool = True              # the controller closing the probe session passes (not for well-formed kinds)
    forbid: tuple = ACTS               # answers that act on the invalid content (SIDE-EFFECT)
    max_answers: Optional[int] = None  # more answers than this on the probe session is a storm (SIDE-EFFECT)
    hazard: str = ""                   # "H": a public report of a hang in Ryu 4.34 (run last, on a fresh controller)
    anchor: str = ""

    @property
    def cls(self) -> str:
        return "Z" if self.id.startswith("FZ:") else self.id[0]

    @property
    def passes(self) -> frozenset:
        ok = {CONFORMANT, TOLERANT}
        if self.close_ok or self.react == CLOSE:
            ok.add(CLOSED)
        if self.react in (HANDSHAKE, CLOSE):
            ok.discard(TOLERANT)       # the spec requires the handshake to go on / the session to end
        return frozenset(ok)

    def applies(self, version: int) -> bool:
        return version in self.versions


# --------------------------------------------------------------------------- the catalogue

def _k(id, title, build, **kw) -> Kind:
    return Kind(id=id, title=title, build=build, **kw)


V13 = (OFP13,)
ERR = "answer with the ERROR named"
X = dict(close_ok=True)
WELL_FORMED = dict(close_ok=False)   # a valid message used abnormally: dropping the switch for it is not OK

CATALOGUE: tuple = (
    # A framing / length
    _k("A01", "length field 0 (an ECHO_REQUEST header)", lambda v: hdr(v, codec.ECHO_REQUEST, 0),
       error=(BAD_REQUEST, BAD_LEN), ideal="BAD_REQUEST/BAD_LEN, or close (framing is lost)", anchor="DELTA", **X),
    _k("A02", "length field 4 (hcprobe test1)", lambda v: hdr(v, codec.ECHO_REQUEST, 4),
       error=(BAD_REQUEST, BAD_LEN), ideal="BAD_LEN, or close", anchor="hcprobe test1.hs", **X),
    _k("A03", "PACKET_IN of 8 bytes: header only, no body", lambda v: hdr(v, codec.PACKET_IN, 8),
       error=(BAD_REQUEST, BAD_LEN), ideal="BAD_LEN and keep the session; discarding is OK"),
    _k("A04", "length smaller than the body: the stream desynchronises (hcprobe 42)",
       lambda v: (lambda m: m[:2] + struct.pack("!H", 42) + m[4:])(pin(v)),
       error=(BAD_REQUEST, BAD_LEN), forbid=(), ideal="BAD_LEN, or close; the 42 bytes its length delimits are a "
       "buffered PACKET_IN without data, so acting on its buffer id is OK", anchor="hcprobe length.hs", **X),
    _k("A05", "length larger than the message: it swallows the next one",
       lambda v: (lambda m: m[:2] + struct.pack("!H", len(m) + 8) + m[4:])(pin(v)) + hdr(v, codec.ECHO_REQUEST, 8),
       error=(BAD_REQUEST, BAD_LEN), forbid=(), ideal="BAD_LEN, or close; the PACKET_IN its length delimits is "
       "well formed (a longer frame), so acting on it is OK", anchor="DELTA control message manipulation", **X),
    _k("A06", "length 9109, longer than anything ever sent (hcprobe)",
       lambda v: hdr(v, codec.PACKET_IN, 9109) + b"\0" * 24, ideal="wait for the rest without blocking others; "
       "an idle or echo timeout may close", anchor="hcprobe userprogram.hs", **X),
    _k("A07", "trailing junk in a fixed-size message (BARRIER_REPLY of 16 bytes)",
       lambda v: msg(v, "barrier_reply", b"\xee" * 8), error=(BAD_REQUEST, BAD_LEN), ideal="BAD_LEN; discarding is OK"),
    _k("A08", "maximum-size message: a 65,535-byte PACKET_IN",
       lambda v: pin(v, data=arp_frame().ljust(65535 - len(pin(v, data=b"")), b"\x5a"), buffer_id=codec.NO_BUFFER),
       react=PROCESS, forbid=(), ideal="process it (or drop it) with bounded memory", **WELL_FORMED),
    _k("A09", "slow drip: a valid ECHO_REQUEST one byte every 100 ms",
       lambda v: drip(msg(v, codec.ECHO_REQUEST, b"drip-drip")), react=PROCESS, forbid=(),
       ideal="answer once complete, without stalling others", **WELL_FORMED),
    _k("A10", "64 bytes of seeded random garbage after the handshake", lambda v: seeded_bytes(64, 8456),
       error=(BAD_REQUEST, BAD_VERSION), ideal="BAD_VERSION/BAD_TYPE, or close", **X),
    # B version
    _k("B01", "PACKET_IN with version 0x42 (hcprobe; DELTA 1.1.070)",
       lambda v: bytes([0x42]) + pin(v)[1:], error=(BAD_REQUEST, BAD_VERSION),
       ideal="BAD_VERSION, no PACKET_OUT/FLOW_MOD; discard or close are OK", anchor="hcprobe version.hs", **X),
    _k("B02", "ECHO_REQUEST with version 0x00 (OFTest ErrorMsg)", lambda v: msg(0, codec.ECHO_REQUEST, b"v0"),
       error=(BAD_REQUEST, BAD_VERSION), ideal="BAD_VERSION; discard or close are OK", anchor="OFTest", **X),
    _k("B03", "PACKET_IN of the supported but not negotiated version (RFC 8456 A.6.1; DELTA 2.1.010)",
       lambda v: pin(other(v)), error=(BAD_REQUEST, BAD_VERSION),
       ideal="BAD_VERSION and no PACKET_OUT/FLOW_MOD; discard or close are OK", anchor="RFC 8456 A.6.1", **X),
    _k("B04", "PACKET_IN of a later defined version (0x06, OpenFlow 1.5) mid-session",
       lambda v: bytes([0x06]) + pin(OFP13)[1:], error=(BAD_REQUEST, BAD_VERSION),
       ideal="BAD_VERSION, no PACKET_OUT/FLOW_MOD; close is OK", **X),
    _k("B05", "HELLO whose version bitmap has no common version", lambda v: hello13(bitmap_element(1 << 7)),
       versions=V13, stage=HELLO_STAGE, error=(HELLO_FAILED, INCOMPATIBLE), react=CLOSE,
       ideal="HELLO_FAILED/INCOMPATIBLE, then close (required)"),
    _k("B06", "HELLO with an all-zero version bitmap", lambda v: hello13(bitmap_element(0)), versions=V13,
       stage=HELLO_STAGE, error=(HELLO_FAILED, INCOMPATIBLE), react=CLOSE, ideal="HELLO_FAILED, then close"),
    _k("B07", "HELLO with header version 0x00 and no bitmap", lambda v: msg(0, codec.HELLO), stage=HELLO_STAGE,
       error=(HELLO_FAILED, INCOMPATIBLE), react=CLOSE, ideal="HELLO_FAILED, then close"),
    # C type
    _k("C01", "message type 217 (OFTest BadMessage)", lambda v: hdr(v, 217, 8), error=(BAD_REQUEST, BAD_TYPE),
       ideal="BAD_TYPE; discard is OK", anchor="OFTest"),
    _k("C02", "type 0xcc on a PACKET_IN body (DELTA 2.1.020)", lambda v: pin(v, type_=0xCC),
       error=(BAD_REQUEST, BAD_TYPE), ideal="BAD_TYPE, no PACKET_OUT; discard is OK", anchor="DELTA 2.1.020"),
    _k("C03", "controller-to-switch FLOW_MOD sent by the switch (1.3: instruction of length 0, ryu #188)",
       lambda v: msg(v, codec.FLOW_MOD, struct.pack("!QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, 0x8000, codec.NO_BUFFER,
                                                    0xFFFFFFFF, 0xFFFFFFFF, 0) + match13(b"")
                     + struct.pack("!HH4x", 4, 0))
       if v == OFP13 else msg(v, codec.FLOW_MOD, b"\0" * 40 + struct.pack("!QHHHHIHH", 0, 0, 0, 0, 0x8000,
                                                                           codec.NO_BUFFER, 0xFFFF, 0)),
       error=(BAD_REQUEST, BAD_TYPE), ideal="BAD_TYPE without a deep parse; discard is OK", hazard="H",
       anchor="faucetsdn/ryu#188"),
    _k("C04", "PACKET_IN header with a PORT_STATUS body (hcprobe type.hs)",
       lambda v: (lambda ps: hdr(v, codec.PACKET_IN, len(ps)) + ps[8:])(port_status(v)),
       error=(BAD_REQUEST, BAD_LEN), ideal="BAD_LEN; discard is OK", anchor="hcprobe type.hs"),
    _k("C05", "unsolicited FEATURES_REPLY with a new datapath id", lambda v: codec.encode_features_reply(
        v, MARK_XID, 0xB4DB4DB4D, 256, 254), ideal="discard; the switch is not re-keyed", **WELL_FORMED),
    _k("C06", "unsolicited BARRIER_REPLY with an unknown xid", lambda v: msg(v, "barrier_reply"),
       ideal="discard", **WELL_FORMED),
    _k("C07", "unsolicited ROLE_REPLY with an unknown xid", lambda v: codec.encode_role_reply(MARK_XID, 2, 7),
       versions=V13, ideal="discard", **WELL_FORMED),
    _k("C08", "unsolicited ECHO_REPLY with an unknown xid", lambda v: msg(v, codec.ECHO_REPLY, b"unasked"),
       ideal="discard", **WELL_FORMED),
    _k("C09", "message type 255 with a body", lambda v: hdr(v, 255, 16) + b"\xff" * 8, error=(BAD_REQUEST, BAD_TYPE),
       ideal="BAD_TYPE; discard is OK"),
    # D session / handshake state
    _k("D01", "TCP connect, never a HELLO (DELTA 2.1.030)", lambda v: b"", stage=SILENT,
       ideal="close after a handshake timeout; keeping it idle is OK", anchor="DELTA 2.1.030", **X),
    _k("D02", "PACKET_IN before any HELLO (DELTA 2.1.040)", lambda v: pin(v), stage=PRE_HELLO,
       ideal="ignore it: no PACKET_OUT/FLOW_MOD; close is OK", anchor="DELTA 2.1.040", **X),
    _k("D03", "a second, incompatible HELLO mid-session (DELTA 1.1.150)",
       lambda v: hello13(bitmap_element(1 << 7), version=v) if v == OFP13 else msg(0x07, codec.HELLO),
       ideal="ignore it, or HELLO_FAILED and close", anchor="DELTA 1.1.150", **X),
    _k("D04", "a second main connection with a live datapath id (DELTA 2.1.050)", lambda v: b"", stage=DUPLICATE,
       react=CLOSE, ideal="exactly one session per datapath id remains (either may close)", anchor="DELTA 2.1.050"),
    _k("D05", "HELLO, then the FEATURES_REQUEST is never answered", lambda v: b"", stage=NO_FEATURES,
       ideal="close at a handshake timeout; keeping it idle is OK", **X),
    _k("D06", "PACKET_IN before the FEATURES_REPLY", lambda v: pin(v), stage=EARLY,
       ideal="discard until the switch is ready", **X),
    _k("D07", "the switch never answers the controller's ECHO_REQUEST", lambda v: b"", stage=MUTE_ECHO,
       ideal="close after the echo timeout; nothing within the window is OK", **X),
    # E PACKET_IN fields
    _k("E01", "unknown buffer_id with truncated data (DELTA 1.1.170)",
       lambda v: pin(v, data=arp_frame()[:14], total_len=60), react=PROCESS, forbid=(),
       ideal="no crash; acting on the buffer is OK (the switch answers BUFFER_UNKNOWN)", anchor="DELTA 1.1.170",
       **WELL_FORMED),
    _k("E02", "total_len 0 with 60 bytes of data", lambda v: pin(v, total_len=0), react=PROCESS, forbid=(),
       ideal="process the data or discard it", **WELL_FORMED),
    _k("E03", "reason undefined (0x7f)", lambda v: pin(v, reason=0x7F), react=PROCESS, forbid=(),
       ideal="discard or treat as generic", **WELL_FORMED),
    _k("E04", "table_id 0xff (OFPTT_ALL, reserved)", lambda v: pin(v, table_id=0xFF), versions=V13, react=PROCESS,
       forbid=(), ideal="discard or treat as generic", **WELL_FORMED),
    _k("E05", "1.3 match without IN_PORT", lambda v: pin(v, match=match13(b"")), versions=V13,
       ideal="discard: no in_port, nothing to act on"),
    _k("E06", "in_port 0 (no such port)", lambda v: pin(v, in_port=0), forbid=("flow_mod",),
       ideal="no FLOW_MOD toward a bogus port; a PACKET_OUT is OK", **WELL_FORMED),
    _k("E07", "runt frame of 10 bytes", lambda v: pin(v, data=arp_frame()[:10]), ideal="discard"),
    _k("E08", "IPv4 header length 4 words (IHL < 5) inside the frame",
       lambda v: pin(v, data=(b"\xff" * 6 + MARK_MAC + b"\x08\x00" + bytes([0x44, 0, 0, 20]) + b"\0" * 16).ljust(60,
                                                                                                          b"\0")),
       react=PROCESS, forbid=(), ideal="forward or discard; no crash", anchor="CVE-2016-2074 class", **WELL_FORMED),
    _k("E09", "LLDP frame with a TLV of length 0 (ryu #130 class)",
       lambda v: pin(v, data=(b"\x01\x80\xc2\x00\x00\x0e" + MARK_MAC + b"\x88\xcc" + b"\x02\x00" * 3
                              + b"\x00\x00").ljust(60, b"\0")),
       react=PROCESS, forbid=(), ideal="discard or forward; the frame parser must end", hazard="H",
       anchor="faucetsdn/ryu#130", **WELL_FORMED),
    _k("E10", "boundary values: xid 0xffffffff, cookie 2^64-1, NO_BUFFER",
       lambda v: pin(v, xid=0xFFFFFFFF, cookie=(1 << 64) - 1 if v == OFP13 else 0, buffer_id=codec.NO_BUFFER),
       react=PROCESS, forbid=(), ideal="normal processing (a control kind)", anchor="BEADS LIE values", **WELL_FORMED),
    _k("E11", "no data at all (data_len 0)", lambda v: pin(v, data=b"", total_len=0), ideal="discard"),
    # F other switch messages
    _k("F01", "PORT_STATUS with reason 9 (undefined)", lambda v: port_status(v, reason=9), ideal="ignore it",
       **WELL_FORMED),
    _k("F02", "PORT_STATUS ADD for port OFPP_ANY / OFPP_NONE",
       lambda v: port_status(v, port_no=0xFFFFFFFF if v == OFP13 else 0xFFFF), ideal="no topology change",
       **WELL_FORMED),
    _k("F03", "PORT_STATUS whose port name is not NUL-terminated (hcprobe ascii.hs)",
       lambda v: port_status(v, reason=2, name=b"\x07" * 16), ideal="truncate the name", anchor="hcprobe ascii.hs",
       **WELL_FORMED),
    _k("F04", "FEATURES_REPLY with datapath id 0, 0 tables, 2^32-1 buffers",
       lambda v: codec.encode_features_reply(v, 0, 0, 0xFFFFFFFF, 0), stage=FEATURES,
       ideal="reject the switch (close) or treat it sanely", **X),
    _k("F05", "FLOW_REMOVED for a flow never installed (DELTA 2.1.060)", flow_removed,
       ideal="no state corrupted", anchor="DELTA 2.1.060", **WELL_FORMED),
    _k("F06", "ROLE_REPLY with an undefined role 9 (CVE-2017-9263 class)",
       lambda v: codec.encode_role_reply(MARK_XID, 9, 0), versions=V13, ideal="ignore it, no abort",
       anchor="CVE-2017-9263", **WELL_FORMED),
    _k("F07", "GET_CONFIG_REPLY with flags 0xffff and miss_send_len 0",
       lambda v: codec.encode_get_config_reply(v, MARK_XID, 0xFFFF, 0), ideal="ignore it", **WELL_FORMED),
    # G ERROR notifications
    _k("G01", "unsolicited well-formed ERROR FLOW_MOD_FAILED/TABLE_FULL",
       lambda v: error(v, 5, 1 if v == OFP13 else 0, b"\0" * 16), ideal="log it", **WELL_FORMED),
    _k("G02", "ERROR with an undefined type 99, code 999", lambda v: error(v, 99, 999), ideal="log it as unknown",
       **WELL_FORMED),
    _k("G03", "ERROR BAD_ACTION/BAD_TYPE with 64 bytes of 0x2a (hcprobe)",
       lambda v: error(v, BAD_ACTION, 0, b"\x2a" * 64), ideal="log it", anchor="hcprobe packet_examples.hs",
       **WELL_FORMED),
    _k("G04", "EXPERIMENTER ERROR (0xffff) shorter than its header", lambda v: error(v, 0xFFFF, 1), ideal="ignore"),
    _k("G05", "every FLOW_MOD/PACKET_OUT answered with BAD_MATCH (an error feedback loop)",
       lambda v: pin(v, buffer_id=codec.NO_BUFFER), stage=ERROR_EVERY, react=PROCESS, forbid=(), max_answers=10,
       ideal="bounded retries: no more answers than PACKET_INs", **WELL_FORMED),
    _k("G06", "ERROR with empty data", lambda v: error(v, BAD_REQUEST, BAD_TYPE), ideal="log it", **WELL_FORMED),
    # H OXM / match TLVs (PACKET_IN, OpenFlow 1.3)
    _k("H01", "match type STANDARD (0) in a 1.3 PACKET_IN",
       lambda v: pin(v, match=match13(IN_PORT_1, mtype=0)), versions=V13, error=(BAD_MATCH, BAD_MATCH_TYPE)),
    _k("H02", "ofp_match length 2 (< 4)", lambda v: pin(v, match=match13(IN_PORT_1, length=2)), versions=V13,
       error=(BAD_MATCH, BAD_MATCH_LEN)),
    _k("H03", "OXM of length 0 (DELTA 1.1.100)", lambda v: pin(v, match=match13(IN_PORT_1 + oxm(3, b""))),
       versions=V13, error=(BAD_MATCH, BAD_MATCH_LEN), anchor="DELTA 1.1.100"),
    _k("H04", "unknown OXM class 0x1234 (DELTA 1.1.090)",
       lambda v: pin(v, match=match13(IN_PORT_1 + oxm(3, b"\0" * 6, cls=0x1234))), versions=V13,
       error=(BAD_MATCH, BAD_FIELD), anchor="DELTA 1.1.090"),
    _k("H05", "unknown OPENFLOW_BASIC field 127", lambda v: pin(v, match=match13(IN_PORT_1 + oxm(127, b"\0" * 4))),
       versions=V13, error=(BAD_MATCH, BAD_FIELD)),
    _k("H06", "mask on a non-maskable field (in_port)",
       lambda v: pin(v, match=match13(oxm(0, struct.pack("!I", 1), b"\xff\xff\xff\x00"))), versions=V13,
       error=(BAD_MATCH, BAD_MASK)),
    _k("H07", "in_port twice", lambda v: pin(v, match=match13(IN_PORT_1 + oxm(0, struct.pack("!I", 2)))),
       versions=V13, error=(BAD_MATCH, DUP_FIELD)),
    _k("H08", "ipv4_src without eth_type (prerequisite violated)",
       lambda v: pin(v, match=match13(IN_PORT_1 + oxm(11, bytes([10, 0, 0, 1])))), versions=V13,
       error=(BAD_MATCH, BAD_PREREQ)),
    _k("H09", "vlan_vid 0xffff (> 0x1fff) (DELTA 1.1.110)",
       lambda v: pin(v, match=match13(IN_PORT_1 + oxm(6, b"\xff\xff"))), versions=V13, error=(BAD_MATCH, BAD_VALUE),
       anchor="DELTA 1.1.110"),
    _k("H10", "match not padded to 8 bytes", lambda v: pin(v, match=match13(IN_PORT_1, pad=False)), versions=V13,
       error=(BAD_MATCH, BAD_MATCH_LEN)),
    # I action / instruction / bucket lists (in unsolicited replies)
    _k("I01", "FLOW_STATS reply with an instruction of length 0 (ryu #192)",
       lambda v: flow_stats(v, instructions13=apply_actions(b"", length=0)), versions=V13,
       error=(BAD_INSTRUCTION, BAD_INST_LEN), hazard="H", anchor="faucetsdn/ryu#192"),
    _k("I02", "FLOW_STATS reply with an action of length 0 in APPLY_ACTIONS (ryu #189)",
       lambda v: flow_stats(v, instructions13=apply_actions(struct.pack("!HHI", 0, 0, 1) + b"\0" * 8)),
       versions=V13, error=(BAD_ACTION, BAD_ACTION_LEN), hazard="H", anchor="faucetsdn/ryu#189"),
    _k("I03", "FLOW_STATS reply with an action of length 12 (not a multiple of 8)",
       lambda v: flow_stats(v, actions10=struct.pack("!HHHH", 0, 12, 1, 0) + b"\0" * 4,
                            instructions13=apply_actions(struct.pack("!HHIH2x", 0, 12, 1, 0))),
       error=(BAD_ACTION, BAD_ACTION_LEN)),
    _k("I04", "FLOW_STATS reply with an unknown instruction type 0x77",
       lambda v: flow_stats(v, instructions13=struct.pack("!HH4x", 0x77, 8)), versions=V13,
       error=(BAD_INSTRUCTION, UNKNOWN_INST)),
    _k("I05", "GROUP_DESC reply with a bucket of length 0 (ryu #193)", lambda v: group_desc(bucket(b"", length=0)),
       versions=V13, error=(GROUP_MOD_FAILED, BAD_BUCKET), hazard="H", anchor="faucetsdn/ryu#193"),
    _k("I06", "GROUP_DESC reply with a bucket action of length 0 (ryu #194)",
       lambda v: group_desc(bucket(struct.pack("!HHI", 0, 0, 1) + b"\0" * 8)), versions=V13,
       error=(BAD_ACTION, BAD_ACTION_LEN), hazard="H", anchor="faucetsdn/ryu#194"),
    # J multipart replies
    _k("J01", "multipart reply of unknown type 0x7777", lambda v: multipart_reply(v, 0x7777, b"\0" * 8),
       error=(BAD_REQUEST, BAD_MULTIPART)),
    _k("J02", "unsolicited DESC reply (unknown xid)",
       lambda v: codec.encode_desc_reply(v, MARK_XID, "m", "h", "s", "1", "d"), ideal="discard", **WELL_FORMED),
    _k("J03", "endless REPLY_MORE: 200 PORT_STATS replies flagged MORE",
       lambda v: multipart_reply(v, codec.MP_PORT_STATS, b"", flags=1) * 200, ideal="a bounded buffer; drop",
       **WELL_FORMED),
    _k("J04", "multipart reply whose body entry has length 0 (ryu #191)",
       lambda v: flow_stats(v, length=0), error=(BAD_REQUEST, BAD_LEN), hazard="H", anchor="faucetsdn/ryu#191"),
    _k("J05", "PORT_DESC reply with the same port number twice",
       lambda v: multipart_reply(v, codec.MP_PORT_DESC, port(v, 1) + port(v, 1)), versions=V13, ideal="sane state",
       **WELL_FORMED),
    _k("J06", "TABLE_FEATURES reply with a property of length 0 (ryu #196)",
       lambda v: multipart_reply(v, codec.MP_TABLE_FEATURES, struct.pack("!HB5x32sQQII", 64 + 8, 0, b"t", 0, 0, 0, 1)
                                 + struct.pack("!HH4x", 0, 0)), versions=V13, error=(TABLE_FEATURES_FAILED, TF_BAD_LEN),
       hazard="H", anchor="faucetsdn/ryu#196"),
    _k("J07", "QUEUE_GET_CONFIG reply with a queue property of length 0 (ryu #190; CVE-2017-9214 class)",
       lambda v: queue_config_reply(v, 0), ideal="discard, no underflow", hazard="H",
       anchor="faucetsdn/ryu#190, CVE-2017-9214"),
    _k("J08", "DESC reply with a short body (100 bytes, not NUL-terminated)",
       lambda v: multipart_reply(v, codec.MP_DESC, b"\x41" * 100), error=(BAD_REQUEST, BAD_LEN),
       ideal="BAD_LEN; truncate or discard is OK"),
    # K HELLO elements, experimenter
    _k("K01", "HELLO element of length 0 (ryu #195: a pre-handshake hang)",
       lambda v: hello13(struct.pack("!HH4x", 1, 0)), versions=V13, stage=HELLO_STAGE,
       error=(HELLO_FAILED, INCOMPATIBLE), ideal="HELLO_FAILED (or BAD_LEN) and close", hazard="H",
       anchor="faucetsdn/ryu#195", **X),
    _k("K02", "unknown HELLO element type before a good bitmap",
       lambda v: hello13(struct.pack("!HH4x", 0x7777, 8) + bitmap_element(1 << OFP13)), versions=V13,
       stage=HELLO_STAGE, react=HANDSHAKE, ideal="ignore the element: the handshake goes on (required)",
       **WELL_FORMED),
    _k("K03", "HELLO element longer than the message", lambda v: hello13(bitmap_element(1 << OFP13, length=64)),
       versions=V13, stage=HELLO_STAGE, error=(HELLO_FAILED, INCOMPATIBLE), ideal="HELLO_FAILED and close", **X),
    _k("K04", "EXPERIMENTER / VENDOR message with an unknown id", lambda v: experimenter(v),
       error=(BAD_REQUEST, BAD_EXPERIMENTER), ideal="BAD_EXPERIMENTER; discard is OK"),
    _k("K05", "EXPERIMENTER message shorter than its fixed part", lambda v: experimenter(v, short=True),
       error=(BAD_REQUEST, BAD_LEN), ideal="BAD_LEN; discard is OK"),
    # L delivery anomalies
    _k("L01", "the same PACKET_IN delivered 10 times (BEADS DUP x10)",
       lambda v: pin(v, buffer_id=codec.NO_BUFFER) * 10, react=PROCESS, forbid=(), max_answers=30,
       ideal="idempotent: answers in proportion, no duplicate state", anchor="BEADS", **WELL_FORMED),
)

BY_ID = {k.id: k for k in CATALOGUE}
if len(BY_ID) != len(CATALOGUE):   # pragma: no cover
    raise AssertionError("duplicate kind ids in the catalogue")


@functools.lru_cache(maxsize=None)
def kind_of(kind_id: str) -> Kind:
    """The catalogue's kind, or the Kind of a fuzzer case ``FZ:MESSAGE.FIELD=VALUE``: a well-formed message
    with one field changed, judged on robustness only (it may be processed, answered, ignored or closed)."""
    if kind_id in BY_ID:
        return BY_ID[kind_id]
    message, field, value = fuzz.parse(kind_id)
    versions = tuple(v for v in (OFP10, OFP13) if message in fuzz.templates(v))
    return Kind(id=fuzz.case_id(message, field, value), title=f"{message} with {field} = {value:#x} (fuzzer)",
                build=functools.partial(fuzz.build, kind_id), versions=versions, react=PROCESS, forbid=(),
                ideal="stay alive and keep serving the other switches", anchor="seeded boundary/random fuzzer")


@functools.lru_cache(maxsize=None)
def payload(kind_id: str, version: int) -> tuple:
    """The kind's sends as ((delay_s, bytes), ...), made once per (kind, version)."""
    kind = kind_of(kind_id)
    made = kind.build(version)
    if isinstance(made, (bytes, bytearray)):
        return ((0.0, bytes(made)),)
    return tuple((float(d), bytes(b)) for d, b in made)


def select(spec: Optional[str], version: int) -> list:
    """The kinds ``spec`` names (ids or class letters, comma-separated; None or 'all': every kind), in
    catalogue order, that apply to ``version``.  An unknown name raises ValueError naming it."""
    if spec is None or spec.strip().lower() == "all":
        chosen = list(CATALOGUE)
    elif spec.strip().lower() == "none":
        chosen = []
    else:
        names = [n.strip() for n in spec.split(",") if n.strip()]
        wanted: set = set()
        cases = []
        for name in names:
            upper = name.upper()
            if upper.startswith("FZ:"):
                cases.append(kind_of(name))       # raises ValueError naming what is wrong
            elif upper in BY_ID:
                wanted.add(upper)
            elif upper in CLASSES:
                wanted.update(k.id for k in CATALOGUE if k.cls == upper)
            else:
                raise ValueError(f"--malformed-kinds: no kind or class {name!r} (kinds A01..L01, classes "
                                 f"{''.join(CLASSES)}, all, none, or a fuzzer case FZ:MESSAGE.FIELD=VALUE)")
        chosen = [k for k in CATALOGUE if k.id in wanted] + cases
    return [k for k in chosen if k.applies(version)]


def screen_order(kinds: list) -> list:
    """Hazards last: the kinds publicly reported to hang a controller run after every other kind."""
    return [k for k in kinds if not k.hazard] + [k for k in kinds if k.hazard]


# --------------------------------------------------------------------------- the outcome of one observation

def _obs(obs, name: str, default=None):
    return obs.get(name, default) if isinstance(obs, dict) else getattr(obs, name, default)


def classify(kind: Kind, obs, alive: bool, params) -> tuple:
    """(outcome, detail) of one observation (a :class:`~emulator.commands.ScreenObservation` or its dict) of
    ``kind``; ``alive``: the controller process still ran afterwards; ``params``: the ScreenParams.
    The first rule that holds decides, most severe first (:data:`RULES`, then the probe's own reaction)."""
    g = functools.partial(_obs, obs)
    if g("error"):
        return NOT_SCREENED, g("error")
    if not alive:
        return CRASH, "the controller process ended"
    for rule in RULES:
        found = rule(kind, g, params)
        if found is not None:
            return found
    return _reaction(kind, g)


def _hung(kind: Kind, g, params) -> Optional[tuple]:
    if g("sentinel_max_wait_ms", 0.0) >= params.hang_s * 1000:
        return HANG, (f"a sentinel probe waited {g('sentinel_max_wait_ms') / 1000:.1f} s for an answer "
                      f"(>= {params.hang_s:g} s) while the controller process lived")
    return None


def _others_harmed(kind: Kind, g, params) -> Optional[tuple]:
    if g("sentinel_closed"):
        return COLLATERAL, f"the innocent sentinel session was dropped ({g('sentinel_closed')})"
    if g("fresh_handshake_ms") is None:
        return COLLATERAL, f"a new switch could not complete a handshake afterwards ({g('fresh_error') or 'no answer'})"
    return None


def _acted_on(kind: Kind, g, params) -> Optional[tuple]:
    acted = [a for a in g("acted", []) if a[1] in kind.forbid]
    if acted:
        ms, name, how = acted[0]
        return SIDE_EFFECT, f"the controller acted on the invalid content: {name.upper()} naming its {how} " \
                            f"{ms:.1f} ms after it was sent ({len(acted)} such answer(s))"
    if kind.max_answers is not None and g("answers", 0) > kind.max_answers:
        return SIDE_EFFECT, f"{g('answers')} PACKET_OUT/FLOW_MOD answers (at most {kind.max_answers} expected)"
    return None


# A sampling round sends the sentinel's ECHO and PACKET_IN together, so one scheduler hiccup on a shared host slows
# two round trips at once; a slowdown the kind caused shows in more than one round.
COLLATERAL_MIN_SLOW = 3


def _sentinel_slowed(kind: Kind, g, params) -> Optional[tuple]:
    after = g("during_ms", [])
    before, during = percentile(g("baseline_ms", []), 99), percentile(after, 99)
    if before is not None and during is not None:
        limit = max(params.collateral_ratio * before, before + params.collateral_floor_ms)
        slow = sum(1 for ms in after if ms > limit)
        if during > limit and slow >= COLLATERAL_MIN_SLOW:
            return COLLATERAL, (f"sentinel p99 round trip {during:.2f} ms after the kind, {before:.2f} ms before "
                                f"(limit {limit:.2f} ms; {slow} round trips above it)")
    return None


# The rules before the probe's own reaction, most severe first: each (kind, observation getter, params) -> an
# (outcome, detail) when it holds, else None.
RULES = (_hung, _others_harmed, _acted_on, _sentinel_slowed)


def _reaction(kind: Kind, g) -> tuple:
    """The outcome from what the probe session saw: the ideal ERROR, a close, or the kind's expected reaction."""
    errors = [r for r in g("replies", []) if r[1] == "error"]
    closed = g("probe_closed", "")
    if kind.error is not None:
        ideal = [r for r in errors if (r[3], r[4]) == tuple(kind.error) and r[2] == MARK_XID]
        if ideal:
            if kind.react == CLOSE and not closed:
                return TOLERANT, f"the ideal ERROR {_err(ideal[0])}, but the session was kept open"
            return CONFORMANT, f"ERROR {_err(ideal[0])}, xid echoed" + (f"; closed ({closed})" if closed else "")
    if closed:
        if kind.react == CLOSE and kind.error is None:
            return CONFORMANT, f"closed ({closed})"
        return CLOSED, f"the controller closed the probe session ({closed})" + (
            f" after ERROR {_err(errors[0])}" if errors else "")
    other = f"ERROR {_err(errors[0])} (not the ideal)" if errors else ""
    expected = _EXPECTED.get(kind.react)
    if expected is not None:
        return expected(kind, g, other)
    if kind.error is not None:
        return TOLERANT, other or "discarded: no ERROR, no action"
    return (TOLERANT, other) if errors else (CONFORMANT, "no reply, no action (discarded)")


def _processed(kind: Kind, g, other: str) -> tuple:
    answered = [a[1] for a in g("acted", [])] or [r[1] for r in g("replies", []) if r[2] == MARK_XID
                                                   and r[1] != "error"]
    if answered or kind.max_answers is not None and g("answers", 0):
        return CONFORMANT, f"processed: {(answered[0] if answered else 'answered').upper()}"
    return TOLERANT, other or "not acted on (discarded)"


def _handshake_went_on(kind: Kind, g, other: str) -> tuple:
    if g("features_requested"):
        return CONFORMANT, "the handshake went on (FEATURES_REQUEST)"
    return TOLERANT, "the handshake did not go on, the session stayed open"


def _kept_open(kind: Kind, g, other: str) -> tuple:
    return TOLERANT, other or "the session was kept open"


# The outcome of an unclosed probe without the ideal ERROR, by the kind's expected reaction.
_EXPECTED = {PROCESS: _processed, HANDSHAKE: _handshake_went_on, CLOSE: _kept_open}


def _err(reply) -> str:
    return f"{reply[3]}/{reply[4]}"


def worst(outcomes: list) -> str:
    """The most severe of several runs' outcomes (NOT-SCREENED only when no run was screened)."""
    screened = [o for o in outcomes if o in OUTCOMES]
    return max(screened, key=OUTCOMES.index) if screened else NOT_SCREENED


def catalogue_markdown() -> str:
    """The catalogue as the docs show it (``python -m emulator.malformed`` prints it)."""
    names = {OFP10: "1.0", OFP13: "1.3"}
    rows = ["| Kind | Message | OpenFlow | Stage | Ideal reaction | Spec ERROR | Passes on | Hazard | Anchor |",
            "|---|---|---|---|---|---|---|---|---|"]
    for k in CATALOGUE:
        err = f"{k.error[0]}/{k.error[1]}" if k.error else "—"
        passes = ", ".join(o for o in OUTCOMES if o in k.passes)
        rows.append(f"| {k.id} | {k.title} | {'/'.join(names[v] for v in k.versions)} | {k.stage} | {k.ideal} | "
                    f"{err} | {passes} | {k.hazard or '—'} | {k.anchor or '—'} |")
    counts = ", ".join(f"{c} {sum(1 for k in CATALOGUE if k.cls == c)}" for c in CLASSES)
    return "\n".join(rows) + (f"\n\n{len(CATALOGUE)} kinds ({counts}); {len(select(None, OFP13))} apply to "
                              f"OpenFlow 1.3, {len(select(None, OFP10))} to 1.0.\n")


if __name__ == "__main__":   # pragma: no cover
    print(catalogue_markdown(), end="")


# --------------------------------------------------------------------------- RFC 8456 §5.3.1: exceptions in the stream

# Kinds that replace a real PACKET_IN by an invalid form of it (its frame kept); any other single-message kind
# replaces it by the kind's own bytes.
DERIVED = {"B01": "version 0x42", "B03": "the supported version not negotiated", "B04": "version 0x06",
           "C02": "type 0xcc"}
EXCEPTION_BLOCK = 100


def exception_bytes(kind_id: str, version: int, xid: int, in_port: int, data: bytes, reason: int = 0) -> bytes:
    """The invalid message sent in place of the PACKET_IN (version, xid, in_port, data, reason)."""
    if kind_id == "B03":
        return codec.encode_packet_in(other(version), xid, codec.NO_BUFFER, in_port & 0xFFFF if version == OFP13
                                      else in_port, data, reason=reason)
    valid = codec.encode_packet_in(version, xid, codec.NO_BUFFER, in_port, data, reason=reason)
    if kind_id in ("B01", "B04"):
        return bytes([0x42 if kind_id == "B01" else 0x06]) + valid[1:]
    if kind_id == "C02":
        return valid[:1] + b"\xcc" + valid[2:]
    sends = payload(kind_id, version)
    return sends[0][1]


def exception_kind_problem(kind_id: str) -> Optional[str]:
    """Why ``kind_id`` cannot stand in for a PACKET_IN in §5.3.1, or None."""
    kind = BY_ID.get(kind_id.upper())
    if kind is None:
        return f"no catalogue kind {kind_id!r}"
    if kind.id in DERIVED:
        return None
    if kind.stage != SESSION or kind.hazard or len(payload(kind.id, kind.versions[-1])) != 1:
        return (f"kind {kind.id} is not one message sent mid-session without a known hazard; use one of "
                f"{', '.join(DERIVED)} or another session kind")
    return None


class ExceptionPlan:
    """Which asynchronous messages become invalid: in every block of :data:`EXCEPTION_BLOCK` consecutive
    messages, ``round(percent)`` seeded positions; so k = round(p·N) of N (±1 for a partial last block)."""

    def __init__(self, percent: float, kind: str = "B03", seed: int = 8456):
        self.percent, self.kind, self.seed = percent, kind, seed
        self.per_block = round(percent * EXCEPTION_BLOCK / 100.0)
        self.rng = random.Random(seed)
        self.seen = 0
        self.replaced = 0
        self._positions: frozenset = frozenset()

    def take(self) -> bool:
        """The next asynchronous message: is it one to replace?"""
        at = self.seen % EXCEPTION_BLOCK
        if at == 0:
            self._positions = frozenset(self.rng.sample(range(EXCEPTION_BLOCK), self.per_block))
        self.seen += 1
        hit = at in self._positions
        self.replaced += hit
        return hit
