"""A tiny MongoDB wire-protocol client for raw-socket tests (OP_MSG, OP_QUERY, CRC-32C).

Only what the tests need: build messages (also deliberately malformed ones), read one reply,
and tell a reply from a closed connection. BSON encoding comes from pymongo's `bson`.
"""

import itertools
import socket
import struct
import time

import bson

OP_REPLY = 1
OP_QUERY = 2004
OP_MSG = 2013

FLAG_CHECKSUM_PRESENT = 1 << 0
FLAG_MORE_TO_COME = 1 << 1
FLAG_EXHAUST_ALLOWED = 1 << 16

HEADER = struct.Struct("<iiii")  # messageLength, requestID, responseTo, opCode

_request_ids = itertools.count(1000)


def next_request_id():
    return next(_request_ids)


# --- CRC-32C (Castagnoli), reflected polynomial 0x82F63B78 -------------------------------------
def _make_crc32c_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _make_crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _CRC32C_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the standard check value


# --- encoding ------------------------------------------------------------------------------
def header(length, request_id, response_to, op_code):
    return HEADER.pack(length, request_id, response_to, op_code)


def section_body(doc):
    """Kind-0 section: the command document."""
    raw = doc if isinstance(doc, (bytes, bytearray)) else bson.encode(doc)
    return b"\x00" + bytes(raw)


def section_sequence(identifier, docs):
    """Kind-1 section: a document sequence (size, C-string identifier, documents)."""
    payload = identifier.encode() + b"\x00" + b"".join(
        d if isinstance(d, (bytes, bytearray)) else bson.encode(d) for d in docs
    )
    return b"\x01" + struct.pack("<i", 4 + len(payload)) + payload


def op_msg_raw(sections, flags=0, request_id=None, checksum=None, op_code=OP_MSG):
    """An OP_MSG from ready-made section bytes.

    checksum: None = none appended (and FLAG_CHECKSUM_PRESENT is left as given),
              True = append the correct CRC-32C (sets the flag),
              int = append this value as the checksum (sets the flag).
    """
    if request_id is None:
        request_id = next_request_id()
    if checksum is not None:
        flags |= FLAG_CHECKSUM_PRESENT
    body = struct.pack("<I", flags) + b"".join(sections)
    length = 16 + len(body) + (4 if checksum is not None else 0)
    msg = header(length, request_id, 0, op_code) + body
    if checksum is True:
        msg += struct.pack("<I", crc32c(msg))
    elif checksum is not None:
        msg += struct.pack("<I", checksum & 0xFFFFFFFF)
    return msg


def op_msg(doc, flags=0, sequences=(), request_id=None, checksum=None):
    """An OP_MSG with body `doc` and optional [(identifier, [docs])] kind-1 sequences."""
    sections = [section_body(doc)] + [section_sequence(i, ds) for i, ds in sequences]
    return op_msg_raw(sections, flags=flags, request_id=request_id, checksum=checksum)


def op_query(full_collection_name, query, request_id=None, number_to_return=-1):
    """A legacy OP_QUERY, as drivers send for the first handshake."""
    if request_id is None:
        request_id = next_request_id()
    body = (
        struct.pack("<i", 0)
        + full_collection_name.encode()
        + b"\x00"
        + struct.pack("<ii", 0, number_to_return)
        + bson.encode(query)
    )
    return header(16 + len(body), request_id, 0, OP_QUERY) + body


def nested_document(depth, key=b"a"):
    """Raw BSON of {a: {a: ... {} ...}} with `depth` levels of embedded documents.

    Built without recursion so that very deep documents (100k levels) are cheap.
    """
    inner = b"\x05\x00\x00\x00\x00"
    per_level = 4 + 1 + len(key) + 1 + 1  # length, type byte, key + NUL, trailing NUL
    prefixes = []
    length = len(inner)
    for _ in range(depth):
        length += per_level
        prefixes.append(struct.pack("<i", length) + b"\x03" + key + b"\x00")
    prefixes.reverse()
    return b"".join(prefixes) + inner + b"\x00" * depth


# --- reading ---------------------------------------------------------------------------------
class Closed(Exception):
    """The peer closed the connection (EOF or reset)."""


def _recv_exact(sock, n, deadline):
    buf = bytearray()
    while len(buf) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"timed out with {len(buf)} of {n} bytes")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(n - len(buf))
        except socket.timeout:
            raise TimeoutError(f"timed out with {len(buf)} of {n} bytes") from None
        except (ConnectionResetError, BrokenPipeError) as e:
            raise Closed(str(e)) from None
        if not chunk:
            raise Closed(f"EOF after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def read_message(sock, timeout=10.0):
    """Reads one message: returns (request_id, response_to, op_code, payload after header).

    Raises Closed on EOF/reset and TimeoutError when nothing complete arrives in time.
    """
    deadline = time.monotonic() + timeout
    head = _recv_exact(sock, 16, deadline)
    length, request_id, response_to, op_code = HEADER.unpack(head)
    if length < 16 or length > 48_000_000:
        raise AssertionError(f"server sent a reply with messageLength {length}")
    payload = _recv_exact(sock, length - 16, deadline)
    return request_id, response_to, op_code, payload


def parse_op_msg(payload, whole_message_for_crc=None):
    """Returns (flags, body_dict, {identifier: [docs]}) of an OP_MSG payload (after the header)."""
    (flags,) = struct.unpack_from("<I", payload, 0)
    end = len(payload)
    if flags & FLAG_CHECKSUM_PRESENT:
        end -= 4
        if whole_message_for_crc is not None:
            (got,) = struct.unpack_from("<I", payload, end)
            want = crc32c(whole_message_for_crc[:-4])
            assert got == want, f"reply checksum {got:#x}, expected {want:#x}"
    pos = 4
    body = None
    sequences = {}
    while pos < end:
        kind = payload[pos]
        pos += 1
        if kind == 0:
            (size,) = struct.unpack_from("<i", payload, pos)
            assert body is None, "reply has two kind-0 sections"
            body = bson.decode(payload[pos : pos + size])
            pos += size
        elif kind == 1:
            (size,) = struct.unpack_from("<i", payload, pos)
            section_end = pos + size
            nul = payload.index(b"\x00", pos + 4)
            ident = payload[pos + 4 : nul].decode()
            docs = []
            p = nul + 1
            while p < section_end:
                (dsize,) = struct.unpack_from("<i", payload, p)
                docs.append(bson.decode(payload[p : p + dsize]))
                p += dsize
            sequences[ident] = docs
            pos = section_end
        else:
            raise AssertionError(f"reply has unknown section kind {kind}")
    assert body is not None, "reply has no kind-0 section"
    return flags, body, sequences


def read_reply(sock, request_id=None, timeout=10.0):
    """Reads one OP_MSG or OP_REPLY reply and returns its body document."""
    _, response_to, op_code, payload = read_message(sock, timeout)
    if request_id is not None:
        assert response_to == request_id, f"responseTo {response_to}, expected {request_id}"
    if op_code == OP_MSG:
        return parse_op_msg(payload)[1]
    if op_code == OP_REPLY:
        # responseFlags, cursorID, startingFrom, numberReturned, then documents
        flags, _cursor, _start, number = struct.unpack_from("<iqii", payload, 0)
        assert number == 1, f"OP_REPLY with {number} documents"
        return bson.decode(payload[20:])
    raise AssertionError(f"unexpected reply opCode {op_code}")


def read_reply_checked(sock, request_id, timeout=10.0):
    """Like read_reply for OP_MSG, also verifying the reply checksum if the flag is set."""
    deadline = time.monotonic() + timeout
    head = _recv_exact(sock, 16, deadline)
    length, _rid, response_to, op_code = HEADER.unpack(head)
    assert 16 < length <= 48_000_000, f"reply messageLength {length}"
    payload = _recv_exact(sock, length - 16, deadline)
    assert response_to == request_id, f"responseTo {response_to}, expected {request_id}"
    assert op_code == OP_MSG, f"reply opCode {op_code}"
    return parse_op_msg(payload, head + payload)


def connect(port, timeout=5.0):
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def command(sock, doc, db="admin", timeout=10.0, sequences=(), checksum=None):
    """Sends one OP_MSG command and returns the reply body."""
    doc = dict(doc)
    doc.setdefault("$db", db)
    rid = next_request_id()
    sock.sendall(op_msg(doc, sequences=sequences, request_id=rid, checksum=checksum))
    return read_reply(sock, rid, timeout)


def ping(port, timeout=5.0):
    """Fresh connection, OP_MSG ping; returns the reply body (raises on any failure)."""
    with connect(port, timeout) as sock:
        return command(sock, {"ping": 1}, timeout=timeout)


def outcome_after_send(sock, timeout=5.0):
    """What the server did after a (bad) message: ('closed', None), ('reply', body) or
    ('silent', None) if the connection is open but nothing arrived within `timeout`."""
    try:
        _, _, op_code, payload = read_message(sock, timeout)
    except Closed:
        return "closed", None
    except TimeoutError:
        return "silent", None
    if op_code == OP_MSG:
        return "reply", parse_op_msg(payload)[1]
    if op_code == OP_REPLY:
        return "reply", bson.decode(payload[20:])
    return "reply", {"unexpectedOpCode": op_code}


def wait_closed(sock, timeout=5.0):
    """True if the peer closes the connection (EOF or reset) within `timeout`; any bytes it sends
    first are ignored."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
        if not chunk:
            return True
