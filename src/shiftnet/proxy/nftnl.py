"""Raw nftables netlink: bulk map elements and the names of a table's objects.

Why: libnftables spends ~15 us of CPU per concatenated map element in its
text (or JSON) parser, so 110,000 elements cost ~1.7 s before the kernel sees
them; packing the same elements with ``struct`` costs ~1 us each. Only map
elements and name listings go this way: chains, rules and sets stay in nft
syntax through libnftables, where they are few.

The element bytes are encoded from the element *strings* that
:func:`shiftnet.proxy.nftables.describe` produced through ``nft_value`` (the
one validating function), so no value reaches the kernel unvalidated, and the
text and netlink paths cannot disagree. Encoding is strict: anything that is
not the expected ``ip . port . index : ip . port`` or
``ip . proto . port : goto chain`` shape is refused.

A socket belongs to the network namespace of the thread that opened it, so it
is opened from the libnftables worker thread (already inside the namespace).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import socket
import struct
from collections.abc import Callable, Iterable, Iterator

from shiftnet.api.names import is_digits
from shiftnet.errors import InvalidInput

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFNL_MSG_BATCH_BEGIN = 0x10
NFNL_MSG_BATCH_END = 0x11
NFT_MSG_GETCHAIN = 4
NFT_MSG_GETSET = 10
NFT_MSG_NEWSETELEM = 12
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_DUMP = 0x300
NLM_F_CREATE = 0x400
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLA_F_NESTED = 0x8000
AF_INET = 2
NFT_GOTO = -4

_PROTOS = {"tcp": 6, "udp": 17}
_ELEMS_PER_MESSAGE_BYTES = 60000  # the element list is one attribute: < 64 KiB
_BATCH_BYTES = 2 << 20


class NetlinkError(OSError):
    """The kernel refused a netlink request (errno and message)."""


def _nla(kind: int, payload: bytes) -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + b"\0" * (-size % 4)


def _ip(text: str) -> bytes:
    """Four bytes of a dotted quad (only the canonical spelling), b"" if it is not one."""
    raw = _quads([text])
    return raw[0] if raw else b""


def _u16(text: str) -> bytes:
    """A port in network order padded to a 4-byte register, b"" if it is not one."""
    if is_digits(text) and str(int(text)) == text and 0 < int(text) < 65536:
        return struct.pack(">H", int(text)) + b"\0\0"
    return b""


def _index(text: str) -> bytes:
    """An endpoint index as numgen writes it: a host-order 32-bit register."""
    if is_digits(text) and str(int(text)) == text and int(text) < 1 << 16:
        return struct.pack("=I", int(text))
    return b""


def _refuse(element: str) -> InvalidInput:
    return InvalidInput(f"nftables netlink: map element {element!r} has an unexpected shape")


# the constant attribute headers around the key and the data of one endpoint element
_KEY_HEAD = struct.pack("=HHHHHH", 40, 1 | NLA_F_NESTED, 20, 1 | NLA_F_NESTED, 16, 1)
_DATA_HEAD = struct.pack("=HHHH", 16, 2 | NLA_F_NESTED, 12, 1)
ENDPOINT_BYTES = 40
PER_MESSAGE = _ELEMS_PER_MESSAGE_BYTES // ENDPOINT_BYTES


_pton4 = functools.partial(socket.inet_pton, socket.AF_INET)


def _quads(texts: list[str]) -> list[bytes]:
    """Addresses as bytes; ``inet_pton`` accepts only the strict dotted quad (no
    shorthand, no leading zeros), [] if any text is not one."""
    try:
        return list(map(_pton4, texts))
    except OSError:
        return []


def encode_endpoints(elements: list[str]) -> list[bytes]:
    """``vip . port . index : ip . port`` elements as NFTA_LIST_ELEM runs, one per message.

    Bulk on purpose (whole-list splits and C-level maps, strict round-trip checks):
    a per-element Python function costs ~5 us, most of the budget at 100,000 elements.
    """
    n = len(elements)
    if not n:
        return []
    sides = "\n".join(elements).replace("\n", " : ").split(" : ")
    keys, datas = sides[0::2], sides[1::2]
    shape_ok = (
        len(sides) == 2 * n
        and set(map(str.count, keys, [" . "] * n)) == {2}
        and set(map(str.count, datas, [" . "] * n)) == {1}
    )
    k = " . ".join(keys).split(" . ") if shape_ok else []
    d = " . ".join(datas).split(" . ") if shape_ok else []
    ports = {p: _u16(p) for p in set(k[1::3]) | set(d[1::2])}
    indexes = {i: _index(i) for i in set(k[2::3])}
    vip_texts = list(set(k[0::3]))  # ~10 elements per VIP: convert each once
    vip_bytes = dict(zip(vip_texts, _quads(vip_texts), strict=False))
    ips = _quads(d[0::2])
    vips_ok = len(vip_bytes) == len(vip_texts) > 0
    if not (shape_ok and vips_ok and ips and all(ports.values()) and all(indexes.values())):
        raise _refuse(next(e for e in elements if not _valid(encode_endpoint, e)))
    parts: list[bytes] = [b""] * (7 * n)
    parts[0::7] = [_KEY_HEAD] * n
    parts[1::7] = map(vip_bytes.__getitem__, k[0::3])
    parts[2::7] = map(ports.__getitem__, k[1::3])
    parts[3::7] = map(indexes.__getitem__, k[2::3])
    parts[4::7] = [_DATA_HEAD] * n
    parts[5::7] = ips
    parts[6::7] = map(ports.__getitem__, d[1::2])
    step = 7 * PER_MESSAGE
    return [b"".join(parts[i : i + step]) for i in range(0, len(parts), step)]


# key (nested value, 12 bytes) + data (nested value, 8 bytes) as one list element
_ENDPOINT = struct.Struct("=HHHHHH12sHHHH8s")


def encode_endpoint(element: str) -> bytes:
    """One endpoints map element (the reference for :func:`encode_endpoints`)."""
    key, _, data = element.partition(" : ")
    f = [*key.split(" . "), *data.split(" . ")]
    if len(f) != 5 or key.count(" . ") != 2:
        raise _refuse(element)
    kb = _ip(f[0]) + _u16(f[1]) + _index(f[2])
    db = _ip(f[3]) + _u16(f[4])
    if len(kb) != 12 or len(db) != 8:
        raise _refuse(element)
    return _ENDPOINT.pack(
        40, 1 | NLA_F_NESTED, 20, 1 | NLA_F_NESTED, 16, 1, kb, 16, 2 | NLA_F_NESTED, 12, 1, db
    )


def encode_verdict(element: str) -> bytes:
    """``vip . proto . port : goto chain`` (a service verdict map element)."""
    key, _, data = element.partition(" : ")
    k = key.split(" . ")
    verb, _, chain = data.partition(" ")
    if len(k) != 3 or verb != "goto" or not _CHAIN_RE.fullmatch(chain) or k[1] not in _PROTOS:
        raise _refuse(element)
    kb = _ip(k[0]) + struct.pack("=I", _PROTOS[k[1]]) + _u16(k[2])
    if len(kb) != 12:
        raise _refuse(element)
    verdict = _nla(1, struct.pack(">i", NFT_GOTO)) + _nla(2, chain.encode() + b"\0")
    body = _nla(1 | NLA_F_NESTED, _nla(1, kb)) + _nla(
        2 | NLA_F_NESTED, _nla(2 | NLA_F_NESTED, verdict)
    )
    return _nla(1 | NLA_F_NESTED, body)


def encode_verdicts(elements: list[str]) -> list[bytes]:
    """``vip . proto . port : goto chain`` elements as NFTA_LIST_ELEM runs (bulk, as
    :func:`encode_endpoints`; the few distinct verdicts are encoded once each)."""
    n = len(elements)
    if not n:
        return []
    sides = "\n".join(elements).replace("\n", " : ").split(" : ")
    keys, datas = sides[0::2], sides[1::2]
    shape_ok = len(sides) == 2 * n and set(map(str.count, keys, [" . "] * n)) == {2}
    k = " . ".join(keys).split(" . ") if shape_ok else []
    ports = {p: _u16(p) for p in set(k[2::3])}
    protos = {p: struct.pack("=I", _PROTOS[p]) if p in _PROTOS else b"" for p in set(k[1::3])}
    tails = {d: _verdict_tail(d) for d in set(datas)}
    vips = _quads(k[0::3])
    if not (
        shape_ok and vips and all(ports.values()) and all(protos.values()) and all(tails.values())
    ):
        raise _refuse(next(e for e in elements if not _valid(encode_verdict, e)))
    heads = {
        d: struct.pack("=HH", 4 + 20 + len(t), 1 | NLA_F_NESTED) + _VKEY_HEAD
        for d, t in tails.items()
    }
    parts: list[bytes] = [b""] * (5 * n)
    parts[0::5] = map(heads.__getitem__, datas)
    parts[1::5] = vips
    parts[2::5] = map(protos.__getitem__, k[1::3])
    parts[3::5] = map(ports.__getitem__, k[2::3])
    parts[4::5] = map(tails.__getitem__, datas)
    per = _ELEMS_PER_MESSAGE_BYTES // (24 + max(map(len, tails.values())))
    step = 5 * per
    return [b"".join(parts[i : i + step]) for i in range(0, len(parts), step)]


_VKEY_HEAD = struct.pack("=HHHH", 20, 1 | NLA_F_NESTED, 16, 1)


def _verdict_tail(data: str) -> bytes:
    """The NFTA_SET_ELEM_DATA attribute of ``goto chain``, b"" if it is not that."""
    verb, _, chain = data.partition(" ")
    if verb != "goto" or not _CHAIN_RE.fullmatch(chain):
        return b""
    verdict = _nla(1, struct.pack(">i", NFT_GOTO)) + _nla(2, chain.encode() + b"\0")
    return _nla(2 | NLA_F_NESTED, _nla(2 | NLA_F_NESTED, verdict))


def _valid(encode: Callable[[str], bytes], element: str) -> bool:
    try:
        encode(element)
    except InvalidInput:
        return False
    return True


_CHAIN_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")


def _header(kind: int, flags: int, seq: int, payload_len: int, family: int, res_id: int) -> bytes:
    return struct.pack("=IHHII", 16 + 4 + payload_len, kind, flags, seq, 0) + struct.pack(
        "=BBH", family, 0, res_id
    )


def _attrs(data: bytes) -> Iterator[tuple[int, bytes]]:
    off = 0
    while off + 4 <= len(data):
        size, kind = struct.unpack_from("=HH", data, off)
        if size < 4:
            return
        yield kind & 0x3FFF, data[off + 4 : off + size]
        off += (size + 3) & ~3


class NftNetlink:
    """One NETLINK_NETFILTER socket (in the namespace of the thread that creates it)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.bind((0, 0))
        for opt, size in ((32, 4 * _BATCH_BYTES), (33, 4 << 20)):  # SO_SNDBUFFORCE, RCVBUFFORCE
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.SOL_SOCKET, opt, size)
        self.sock.settimeout(60)
        self.seq = int.from_bytes(os.urandom(3), "big")

    def close(self) -> None:
        self.sock.close()

    def _next(self) -> int:
        self.seq = (self.seq + 1) & 0x7FFFFFFF
        return self.seq

    def add_elements(self, table: str, maps: dict[str, list[bytes]]) -> int:
        """Add element runs (from ``encode_*``) to existing maps; a transaction per ~2 MiB.

        Returns the number of transactions. Raises NetlinkError (the failed batch is
        rolled back by the kernel; earlier batches stay, which is why callers only load
        maps that no rule references yet).
        """
        tattr = _nla(1, table.encode() + b"\0")
        msgs: list[bytes] = []
        seqs: list[int] = []
        size = 0
        batches = 0
        for name, elements in sorted(maps.items()):
            head = tattr + _nla(2, name.encode() + b"\0")
            for chunk in elements:
                lst = struct.pack("=HH", 4 + len(chunk), 3 | NLA_F_NESTED) + chunk
                payload = head + lst
                kind = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWSETELEM
                flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK
                seqs.append(self._next())
                msgs.append(_header(kind, flags, seqs[-1], len(payload), AF_INET, 0) + payload)
                size += len(msgs[-1])
                if size >= _BATCH_BYTES:
                    self._batch(msgs, seqs)
                    batches += 1
                    msgs, seqs, size = [], [], 0
        if msgs:
            self._batch(msgs, seqs)
            batches += 1
        return batches

    def _batch(self, msgs: list[bytes], seq_list: list[int]) -> None:
        res = socket.htons(NFNL_SUBSYS_NFTABLES)
        begin = _header(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, self._next(), 0, 0, res)
        end = _header(NFNL_MSG_BATCH_END, NLM_F_REQUEST, self._next(), 0, 0, res)
        self.sock.sendall(begin + b"".join(msgs) + end)
        seqs = set(seq_list)
        errors: list[str] = []
        while seqs:
            for kind, seq, body in self._recv():
                if kind == NLMSG_ERROR and seq in seqs:  # (late answers to older requests: skip)
                    code = -struct.unpack_from("=i", body)[0]
                    seqs.discard(seq)
                    if code:
                        errors.append(os.strerror(code))
                        seqs.clear()
        if errors:
            raise NetlinkError(errno.EINVAL, f"kernel refused map elements: {errors[0]}")

    def _recv(self) -> Iterator[tuple[int, int, bytes]]:
        data = self.sock.recv(1 << 20)
        off = 0
        while off + 16 <= len(data):
            length, kind, _flags, seq, _pid = struct.unpack_from("=IHHII", data, off)
            yield kind, seq, data[off + 16 : off + length]
            off += (length + 3) & ~3

    def names(self, table: str) -> tuple[set[str], set[str]]:
        """(chain names, set and map names) of ``ip`` table ``table`` (empty if absent)."""
        return self._dump(NFT_MSG_GETCHAIN, table, 3), self._dump(NFT_MSG_GETSET, table, 2)

    def _dump(self, msg: int, table: str, name_attr: int) -> set[str]:
        payload = _nla(1, table.encode() + b"\0")
        kind = (NFNL_SUBSYS_NFTABLES << 8) | msg
        seq = self._next()
        self.sock.sendall(
            _header(kind, NLM_F_REQUEST | NLM_F_DUMP, seq, len(payload), AF_INET, 0) + payload
        )
        found: set[str] = set()
        while True:
            for k, s, body in self._recv():
                if s != seq:
                    continue
                if k == NLMSG_DONE:
                    return found
                if k == NLMSG_ERROR:
                    code = -struct.unpack_from("=i", body)[0]
                    if code in (0, errno.ENOENT):
                        return found
                    raise NetlinkError(code, f"listing table {table}: {os.strerror(code)}")
                attrs = dict(_attrs(body[4:]))
                if attrs.get(1, b"").rstrip(b"\0").decode() == table and name_attr in attrs:
                    found.add(attrs[name_attr].rstrip(b"\0").decode())


def _chunks(elements: Iterable[bytes], limit: int) -> Iterator[bytes]:
    buf: list[bytes] = []
    size = 0
    for e in elements:
        if size + len(e) > limit and buf:
            yield b"".join(buf)
            buf, size = [], 0
        buf.append(e)
        size += len(e)
    if buf:
        yield b"".join(buf)
