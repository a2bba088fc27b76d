"""Frames for PACKET_IN traffic: built once per trial with Scapy, then patched in place.

Scapy builds one template frame (ARP request or IPv4/UDP, of the RFC's sizes 128,
512 or 1508 bytes).  :class:`PacketInBlock` tiles the PACKET_IN that carries it
once per source MAC of a switch, and patches each message's xid, buffer_id and
request tag through numpy views at fixed strides, so the hot path never builds a
message: it patches a slice of the block and writes it.

Addresses (locally administered, unicast):
* test source MAC of switch ``d``, MAC index ``i``: ``02:dd:dd:ii:ii:ii``
  (datapath id in two bytes, the index in three), arriving on port 1;
* the switch's learned destination host: ``06:dd:dd:00:00:01`` on port 2.

Every frame carries a request tag at frame offset 42 (the UDP payload, or the
padding after the ARP body): the trial's nonce and the request's sequence
number, 4 bytes each.  An unbuffered PACKET_OUT is matched by the tag in the
frame it carries.
"""

from __future__ import annotations

import struct
from typing import Optional

import numpy as np

from . import codec, fastpath

FRAME_KINDS = ("ipv4", "arp")
RFC_FRAME_SIZES = (128, 512, 1508)
MIN_FRAME, MAX_FRAME = 64, 9000
TAG_AT = 42                      # frame offset of the request tag
TAG = struct.Struct("!II")       # nonce, sequence
_U32 = struct.Struct("!I")
TEST_PORT, HOST_PORT = 1, 2
MAX_MACS = 1 << 24


def src_mac(datapath_id: int, index: int) -> bytes:
    return bytes([0x02, (datapath_id >> 8) & 0xFF, datapath_id & 0xFF,
                  (index >> 16) & 0xFF, (index >> 8) & 0xFF, index & 0xFF])


def host_mac(datapath_id: int) -> bytes:
    return bytes([0x06, (datapath_id >> 8) & 0xFF, datapath_id & 0xFF, 0, 0, 1])


def mac_index(mac: bytes) -> int:
    return (mac[3] << 16) | (mac[4] << 8) | mac[5]


def check_frame(kind: str, size: int) -> None:
    if kind not in FRAME_KINDS:
        raise ValueError(f"frame kind must be one of {', '.join(FRAME_KINDS)} (got {kind!r})")
    if not MIN_FRAME <= size <= MAX_FRAME:
        raise ValueError(f"frame size must be {MIN_FRAME}..{MAX_FRAME} bytes (got {size})")


def build_template(kind: str = "ipv4", size: int = 128) -> bytes:
    """One frame of exactly ``size`` bytes (no FCS), addresses to be patched per message."""
    check_frame(kind, size)
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import ARP, Ether
    from scapy.packet import Padding, Raw

    src, dst = "02:00:00:00:00:00", "06:00:00:00:00:01"
    if kind == "ipv4":
        # UDP checksum 0 ("none", allowed over IPv4): the tag is patched after building.
        pkt = (Ether(src=src, dst=dst) / IP(src="10.0.0.1", dst="10.0.0.2", ttl=64)
               / UDP(sport=40000, dport=50000, chksum=0) / Raw(b"\0" * (size - TAG_AT)))
    else:
        pkt = (Ether(src=src, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=src, psrc="10.0.0.1", pdst="10.0.0.2")
               / Padding(b"\0" * (size - TAG_AT)))
    frame = bytes(pkt)
    if len(frame) != size:
        raise AssertionError(f"template frame is {len(frame)} bytes, wanted {size}")
    return frame


def learn_frame(datapath_id: int) -> bytes:
    """A gratuitous ARP from the switch's destination host, so the controller learns where it is."""
    return garp_frame(host_mac(datapath_id), f"10.{(datapath_id >> 8) & 0xFF}.{datapath_id & 0xFF}.254")


def garp_frame(mac: bytes, ip: str) -> bytes:
    """A gratuitous ARP (reply form, broadcast) announcing ``mac`` at ``ip``, padded to 60 bytes."""
    from scapy.layers.l2 import ARP, Ether
    from scapy.packet import Padding
    text = ":".join(f"{b:02x}" for b in mac)
    return bytes(Ether(src=text, dst="ff:ff:ff:ff:ff:ff") / ARP(op=2, hwsrc=text, psrc=ip, hwdst=text, pdst=ip)
                 / Padding(b"\0" * 18))


class PacketInBlock:
    """``n_macs`` PACKET_INs of one switch, one per source MAC, patched per request.

    Request ``seq`` uses MAC index ``seq % n_macs``.  :meth:`take` patches the
    messages for ``count`` consecutive requests and returns their bytes.
    """

    def __init__(self, version: int, datapath_id: int, template: bytes, n_macs: int, nonce: int,
                 buffered: bool = True, miss_send_len: int = 128):
        if not 1 <= n_macs <= MAX_MACS:
            raise ValueError(f"source MACs per switch must be 1..{MAX_MACS} (got {n_macs})")
        self.n = n_macs
        self.buffered = buffered
        self.miss_send_len = miss_send_len
        frame = template
        if buffered and miss_send_len < len(frame):
            frame = frame[:max(miss_send_len, TAG_AT + TAG.size)]
        msg = codec.encode_packet_in(version, 0, 0 if buffered else codec.NO_BUFFER, TEST_PORT, frame,
                                     total_len=len(template))
        self.length = L = len(msg)
        self.data_at = codec.PACKET_IN_DATA_OFFSET[version]
        self.block = bytearray(msg * n_macs)
        self.view = memoryview(self.block)
        rows = np.frombuffer(self.block, dtype=np.uint8).reshape(n_macs, L)
        idx = np.arange(n_macs, dtype=np.uint32)
        d = self.data_at
        dst = host_mac(datapath_id)
        rows[:, d:d + 6] = np.frombuffer(dst, dtype=np.uint8)
        src = np.frombuffer(src_mac(datapath_id, 0), dtype=np.uint8)
        for at in ((d + 6,) + ((d + 22,) if template[12:14] == b"\x08\x06" else ())):  # Ether src (+ ARP sha)
            if at + 6 > L:
                continue
            rows[:, at:at + 3] = src[:3]
            rows[:, at + 3] = (idx >> 16) & 0xFF
            rows[:, at + 4] = (idx >> 8) & 0xFF
            rows[:, at + 5] = idx & 0xFF
        tag_at = d + TAG_AT
        self._xid = self._field(4)
        self._buffer_id = self._field(8) if buffered else None
        self._nonce = self._field(tag_at)
        self._seq = self._field(tag_at + 4)
        self.set_nonce(nonce)

    def set_nonce(self, nonce: int) -> None:
        """A new trial's nonce: unbuffered answers to an earlier trial's requests no longer match."""
        self._nonce[:] = nonce & 0xFFFFFFFF

    def _field(self, offset: int):
        return np.ndarray((self.n,), dtype=">u4", buffer=self.block, offset=offset, strides=(self.length,))

    def take(self, seq: int, count: int) -> bytes:
        """The messages for requests ``seq .. seq+count-1`` (xid = buffer_id = tag seq = request seq)."""
        native = fastpath.native
        if native is not None:
            return native.fill(self.block, self.length, self.n, seq, count, 4, 8 if self.buffered else -1,
                               self.data_at + TAG_AT + 4)
        if count == 1:  # closed-loop modes: three struct writes beat numpy's per-call overhead
            L = self.length
            at = (seq % self.n) * L
            _U32.pack_into(self.block, at + 4, seq)
            if self.buffered:
                _U32.pack_into(self.block, at + 8, seq)
            _U32.pack_into(self.block, at + self.data_at + TAG_AT + 4, seq)
            return self.view[at:at + L].tobytes()
        out = []
        while count > 0:
            i0 = seq % self.n
            k = min(count, self.n - i0)
            values = np.arange(seq, seq + k, dtype=np.uint32)
            self._xid[i0:i0 + k] = values
            if self._buffer_id is not None:
                self._buffer_id[i0:i0 + k] = values
            self._seq[i0:i0 + k] = values
            out.append(self.view[i0 * self.length:(i0 + k) * self.length].tobytes())
            seq += k
            count -= k
        return out[0] if len(out) == 1 else b"".join(out)

    def one(self, seq: int) -> bytes:
        return self.take(seq, 1)


def parse_tag(frame_data: bytes, at: int = TAG_AT) -> Optional[tuple]:
    if len(frame_data) < at + TAG.size:
        return None
    return TAG.unpack_from(frame_data, at)
