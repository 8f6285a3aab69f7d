"""Malformed and hostile wire input over raw sockets.

What bad input gets (ARCHITECTURE.md): a clear error reply with MongoDB's code, or a closed
connection for framing errors; never a crash, never a hang. After every test the server process
must be alive and answer `ping` on a fresh connection.
"""

import socket
import struct

import bson
import pytest
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

import tessera_wire as wire
from tessera_wire import OP_MSG, header, op_msg, op_msg_raw, section_body, section_sequence

DEADLINE = 5.0  # seconds to wait for a close or a reply


@pytest.fixture(autouse=True)
def server_stays_healthy(server):
    yield
    assert server.alive, f"tessera died\n{server.log_tail()}"
    reply = wire.ping(server.port)
    assert reply.get("ok") == 1, f"ping after the test replied {reply!r}"


@pytest.fixture
def sock(server):
    s = wire.connect(server.port)
    yield s
    s.close()


def assert_rejected(sock):
    """The server answered with an error or closed the connection; it did not accept."""
    kind, body = wire.outcome_after_send(sock, DEADLINE)
    if kind == "reply":
        assert body.get("ok") != 1, f"malformed message was accepted: {body!r}"
        assert "code" in body or "errmsg" in body, f"error reply without code/errmsg: {body!r}"
    else:
        assert kind != "silent", "no reply and no close: the server hangs on this input"
    return kind, body


# --- sanity: the raw client works ---------------------------------------------------------------
def test_raw_op_msg_ping(sock):
    assert wire.command(sock, {"ping": 1})["ok"] == 1


def test_op_query_handshake_gets_op_reply(sock):
    rid = wire.next_request_id()
    sock.sendall(wire.op_query("admin.$cmd", {"isMaster": 1, "client": {"application": {"name": "raw"}}}, rid))
    _, response_to, op_code, payload = wire.read_message(sock, DEADLINE)
    assert op_code == wire.OP_REPLY
    assert response_to == rid
    _flags, cursor_id, _start, number = struct.unpack_from("<iqii", payload, 0)
    assert (cursor_id, number) == (0, 1)
    doc = bson.decode(payload[20:])
    assert doc["ok"] == 1 and doc["ismaster"] is True
    assert doc["maxWireVersion"] >= 9
    # The same socket then speaks OP_MSG.
    assert wire.command(sock, {"ping": 1})["ok"] == 1


def test_pipelined_requests_are_answered_in_order(sock):
    rids = [wire.next_request_id() for _ in range(3)]
    sock.sendall(b"".join(op_msg({"ping": 1, "$db": "admin"}, request_id=r) for r in rids))
    for r in rids:
        assert wire.read_reply(sock, r, DEADLINE)["ok"] == 1


def test_document_sequence_insert(sock):
    reply = wire.command(
        sock,
        {"insert": "seq", "ordered": True},
        db="badinput",
        sequences=[("documents", [{"_id": 1, "a": "x"}, {"_id": 2, "a": "y"}])],
    )
    assert reply["ok"] == 1 and reply["n"] == 2
    reply = wire.command(sock, {"find": "seq", "filter": {}, "sort": {"_id": 1}}, db="badinput")
    assert reply["cursor"]["firstBatch"] == [{"_id": 1, "a": "x"}, {"_id": 2, "a": "y"}]
    wire.command(sock, {"drop": "seq"}, db="badinput")


def test_more_to_come_gets_no_reply(sock):
    insert_id = wire.next_request_id()
    sock.sendall(
        op_msg(
            {"insert": "mtc", "$db": "badinput", "writeConcern": {"w": 0}},
            flags=wire.FLAG_MORE_TO_COME,
            sequences=[("documents", [{"_id": 1}])],
            request_id=insert_id,
        )
    )
    ping_id = wire.next_request_id()
    sock.sendall(op_msg({"ping": 1, "$db": "admin"}, request_id=ping_id))
    # The first reply on the socket must be the ping's: nothing answers a moreToCome message.
    assert wire.read_reply(sock, ping_id, DEADLINE)["ok"] == 1
    reply = wire.command(sock, {"find": "mtc", "filter": {}}, db="badinput")
    assert reply["cursor"]["firstBatch"] == [{"_id": 1}]
    wire.command(sock, {"drop": "mtc"}, db="badinput")


def test_valid_checksum_is_accepted(sock):
    rid = wire.next_request_id()
    sock.sendall(op_msg({"ping": 1, "$db": "admin"}, request_id=rid, checksum=True))
    _flags, body, _ = wire.read_reply_checked(sock, rid, DEADLINE)  # verifies a reply checksum too
    assert body["ok"] == 1


def test_bad_checksum_is_rejected(sock):
    msg = op_msg({"ping": 1, "$db": "admin"}, checksum=True)
    good = struct.unpack("<I", msg[-4:])[0]
    sock.sendall(msg[:-4] + struct.pack("<I", good ^ 0xDEADBEEF))
    assert_rejected(sock)


# --- framing errors: the connection is closed -------------------------------------------------
@pytest.mark.parametrize(
    "length",
    [-1, -2147483648, 0, 4, 15, 48_000_001, 0x7FFFFFFF],
    ids=["minus1", "int_min", "zero", "four", "fifteen", "over_48MB", "int_max"],
)
def test_bad_message_length_closes_connection(sock, length):
    sock.sendall(header(length, wire.next_request_id(), 0, OP_MSG) + b"\x00" * 16)
    assert wire.wait_closed(sock, DEADLINE), f"connection still open after messageLength {length}"


@pytest.mark.parametrize("cut", ["half_header", "header_only", "body_cut"])
def test_truncated_message_then_eof(sock, cut):
    full = op_msg({"ping": 1, "$db": "admin"})
    data = {"half_header": full[:8], "header_only": full[:16], "body_cut": full[:-3]}[cut]
    sock.sendall(data)
    sock.shutdown(socket.SHUT_WR)
    kind, body = wire.outcome_after_send(sock, DEADLINE)
    assert kind == "closed", f"truncated message got {kind}: {body!r}"


def test_abrupt_disconnects(server):
    for i in range(50):
        s = wire.connect(server.port)
        s.sendall(op_msg({"ping": 1, "$db": "admin"})[: i % 30])
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
        s.close()


# --- unknown opcodes ----------------------------------------------------------------------------
@pytest.mark.parametrize("op_code", [9999, 2002, 2005, 2012, 0, -5])
def test_unknown_or_removed_op_code(sock, op_code):
    # An op code Tessera does not speak (removed legacy ones, OP_COMPRESSED, garbage) is a framing
    # error: the connection is closed, never left waiting or answered out of sync.
    payload = b"\x00" * 24
    sock.sendall(header(16 + len(payload), wire.next_request_id(), 0, op_code) + payload)
    kind, body = assert_rejected(sock)
    assert kind == "closed", f"op code {op_code}: {kind} {body!r}"


# --- invalid BSON and malformed OP_MSG structure --------------------------------------------------
def _doc(elements):
    return struct.pack("<i", 4 + len(elements) + 1) + elements + b"\x00"


PING = bson.encode({"ping": 1, "$db": "admin"})

INVALID_BODIES = {
    "length_past_message": b"\x00" + struct.pack("<i", 5000) + PING[4:],
    "length_below_5": b"\x00" + struct.pack("<i", 3) + b"\x00\x00",
    "length_negative": b"\x00" + struct.pack("<i", -20) + PING[4:],
    "no_terminating_nul": b"\x00" + PING[:-1] + b"\x01",
    "unknown_element_type": b"\x00" + _doc(b"\x99a\x00" + b"\x00" * 8),
    "string_length_too_big": b"\x00" + _doc(b"\x02s\x00" + struct.pack("<i", 1000) + b"ab\x00"),
    "string_not_nul_terminated": b"\x00" + _doc(b"\x02s\x00" + struct.pack("<i", 3) + b"abc"),
    "string_length_zero": b"\x00" + _doc(b"\x02s\x00" + struct.pack("<i", 0)),
    "key_not_terminated": b"\x00" + struct.pack("<i", 9) + b"\x10abcd",
    "embedded_doc_overruns": b"\x00" + _doc(b"\x03d\x00" + struct.pack("<i", 100) + b"\x00"),
    "truncated_int32": b"\x00" + _doc(b"\x10n\x00\x01\x00"),
    "bad_bool_value": b"\x00" + _doc(b"\x08ping\x00\x07"),
}


@pytest.mark.parametrize("body", list(INVALID_BODIES.values()), ids=list(INVALID_BODIES))
def test_invalid_bson_body(sock, body):
    sock.sendall(op_msg_raw([body]))
    assert_rejected(sock)


def test_trailing_garbage_after_sections(sock):
    sock.sendall(op_msg_raw([section_body({"ping": 1, "$db": "admin"}), b"\x00\x01\x02"]))
    assert_rejected(sock)


STRUCTURE_ERRORS = {
    "no_sections": [],
    "two_bodies": [section_body({"ping": 1, "$db": "admin"}), section_body({"ping": 1, "$db": "admin"})],
    "unknown_section_kind_5": [section_body({"ping": 1, "$db": "admin"}), b"\x05" + PING],
    "unknown_section_kind_2": [section_body({"ping": 1, "$db": "admin"}), b"\x02" + PING],
    "sequence_size_overruns": [
        section_body({"insert": "x", "$db": "badinput"}),
        b"\x01" + struct.pack("<i", 10_000) + b"documents\x00" + bson.encode({"_id": 1}),
    ],
    "sequence_size_too_small": [
        section_body({"insert": "x", "$db": "badinput"}),
        b"\x01" + struct.pack("<i", 2) + b"documents\x00",
    ],
    "sequence_without_body": [section_sequence("documents", [{"_id": 1}])],
}


@pytest.mark.parametrize("sections", list(STRUCTURE_ERRORS.values()), ids=list(STRUCTURE_ERRORS))
def test_malformed_op_msg_structure(sock, sections):
    sock.sendall(op_msg_raw(sections))
    assert_rejected(sock)


def test_unknown_required_flag_bit(sock):
    sock.sendall(op_msg({"ping": 1, "$db": "admin"}, flags=1 << 3))
    assert_rejected(sock)


def test_command_without_db_is_an_error(sock):
    sock.sendall(op_msg({"ping": 1}))
    kind, body = assert_rejected(sock)
    if kind == "reply":
        assert body["ok"] == 0


def test_empty_command_is_an_error(sock):
    sock.sendall(op_msg({"$db": "admin"}))
    assert_rejected(sock)


# --- hostile documents ------------------------------------------------------------------------
def _insert_raw(sock, doc_bytes, coll, via_sequence=True):
    if via_sequence:
        return wire.command(
            sock,
            {"insert": coll},
            db="badinput",
            sequences=[("documents", [doc_bytes])],
            timeout=30,
        )
    cmd = {"insert": coll, "documents": [RawBSONDocument(doc_bytes)], "$db": "badinput"}
    rid = wire.next_request_id()
    sock.sendall(op_msg(bson.encode(cmd), request_id=rid))
    return wire.read_reply(sock, rid, 30)


def _assert_insert_failed(reply):
    if reply.get("ok") == 1:
        assert reply.get("n", 0) == 0 and reply.get("writeErrors"), f"insert accepted: {reply!r}"
    else:
        assert "code" in reply, reply


def _count(server, coll):
    return server.client()["badinput"][coll].count_documents({})


@pytest.mark.parametrize("via_sequence", [True, False], ids=["kind1", "kind0"])
def test_document_nested_200_levels_is_refused(server, sock, via_sequence):
    coll = f"deep200_{int(via_sequence)}"
    reply = _insert_raw(sock, wire.nested_document(200), coll, via_sequence)
    _assert_insert_failed(reply)
    assert _count(server, coll) == 0


def test_document_nested_50_levels_is_fine(server, sock):
    doc = wire.nested_document(50)
    reply = _insert_raw(sock, bson.encode({"_id": 1, "d": RawBSONDocument(doc)}), "deep50")
    assert reply["ok"] == 1 and reply["n"] == 1, reply
    got = server.client()["badinput"]["deep50"].find_one({"_id": 1})
    assert bson.encode(got["d"]) == doc


def test_document_nested_100000_levels_does_not_crash(sock):
    doc = wire.nested_document(100_000)  # ~800 KB, far too deep for recursion
    sock.sendall(
        op_msg(
            {"insert": "deep100k", "$db": "badinput"},
            sequences=[("documents", [doc])],
        )
    )
    kind, body = wire.outcome_after_send(sock, 30)
    assert kind != "silent", "no reply and no close"
    if kind == "reply":
        _assert_insert_failed(body)


def test_document_over_16MiB_is_refused(server, sock):
    big = bson.encode({"_id": 1, "s": "x" * (16 * 1024 * 1024)})
    assert len(big) > 16 * 1024 * 1024
    sock.sendall(op_msg({"insert": "big", "$db": "badinput"}, sequences=[("documents", [big])]))
    kind, body = wire.outcome_after_send(sock, 30)
    assert kind != "silent", "no reply and no close"
    if kind == "reply":
        _assert_insert_failed(body)
    assert _count(server, "big") == 0


def test_invalid_utf8_in_filter(sock):
    # A filter whose string value is not valid UTF-8: an error or an empty result, not a crash.
    bad = _doc(b"\x02a\x00" + struct.pack("<i", 3) + b"\xff\xfe\x00")
    cmd = b"".join(
        [
            b"\x02find\x00" + struct.pack("<i", 2) + b"x\x00",
            b"\x03filter\x00" + bad,
            b"\x02$db\x00" + struct.pack("<i", 9) + b"badinput\x00",
        ]
    )
    sock.sendall(op_msg_raw([b"\x00" + _doc(cmd)]))
    kind, body = wire.outcome_after_send(sock, DEADLINE)
    assert kind != "silent"
    if kind == "reply":
        assert body.get("ok") == 0 or body["cursor"]["firstBatch"] == []


# --- memory that user input would drive (issue 40): bounded, refused with ExceededMemoryLimit ----
def _rss_high_water_kb(server):
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _doubling(seed, times, op):
    """A $reduce that doubles `seed` `times` times with `op` ($concat or $concatArrays)."""
    return {
        "$reduce": {
            "input": {"$range": [0, times]},
            "initialValue": seed,
            "in": {op: ["$$value", "$$value"]},
        }
    }


MEMORY_PIPELINES = {
    "range of two billion": [{"$project": {"r": {"$range": [0, 2000000000]}}}],
    "size of a huge range": [{"$project": {"r": {"$size": {"$range": [0, 200000000]}}}}],
    "doubling string": [{"$project": {"r": _doubling("ab", 40, "$concat")}}],
    "doubling array": [{"$project": {"r": {"$size": _doubling([1], 40, "$concatArrays")}}}],
    "map over a huge range": [
        {"$project": {"r": {"$map": {"input": {"$range": [0, 50000000]}, "in": "$$this"}}}}
    ],
    "array literal of a big value": [
        {"$project": {"big": _doubling("ab", 21, "$concat")}},
        {"$project": {"r": ["$big"] * 40}},
    ],
    "split into tiny parts": [
        {"$project": {"r": {"$size": {"$split": [_doubling("a,", 24, "$concat"), ","]}}}}
    ],
}


@pytest.mark.parametrize("name", sorted(MEMORY_PIPELINES))
def test_expression_memory_is_bounded(server, name):
    coll = server.client()["badinput"]["memory"]
    coll.insert_one({"_id": name})
    with pytest.raises(OperationFailure) as err:
        list(coll.aggregate(MEMORY_PIPELINES[name], maxTimeMS=60000))
    assert err.value.code == 146, err.value.details  # ExceededMemoryLimit, before allocating
    assert _rss_high_water_kb(server) < 2 * 1024 * 1024, "the server's memory grew past 2 GiB"
