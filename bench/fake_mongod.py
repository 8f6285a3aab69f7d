#!/usr/bin/python3
"""A tiny in-memory MongoDB wire-protocol stub, only to smoke-test tessera_loadgen and run.sh
while no real server is available. It is NOT a benchmark target (pure Python, one GIL).

Speaks the OP_QUERY handshake (OP_REPLY) and OP_MSG (kind-0 body, kind-1 document sequences).
Commands: hello/isMaster, ping, buildInfo, endSessions, drop, createIndexes, insert,
find (filter on _id equality or an integer _id range {$gte, $lt}, or empty), getMore,
killCursors, update ($inc/$set on a matched _id). Listens on 127.0.0.1 only.

usage: fake_mongod.py --port P [--port-file F]   (--port 0 picks a free port and writes it to F)
Needs the bson module of Debian's python3-pymongo.
"""
import argparse
import itertools
import os
import socketserver
import struct
import threading

import bson

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013
_lock = threading.Lock()
_collections = {}  # "db.coll" -> {id: doc}
_cursors = {}  # id -> (ns, remaining docs)
_cursor_ids = itertools.count(1)
_request_ids = itertools.count(1)


def _err(code, name, msg):
    return {"ok": 0.0, "code": code, "codeName": name, "errmsg": msg}


def _matching(store, flt):
    if not flt:
        return list(store.values())
    if set(flt) != {"_id"}:
        raise ValueError("fake_mongod only filters on _id")
    cond = flt["_id"]
    if isinstance(cond, dict):
        lo, hi = cond.get("$gte"), cond.get("$lt")
        if not isinstance(lo, int) or not isinstance(hi, int) or len(cond) != 2:
            raise ValueError("fake_mongod only supports integer {$gte, $lt} ranges")
        return [store[i] for i in range(lo, hi) if i in store]
    doc = store.get(cond)
    return [doc] if doc is not None else []


def _batch(ns, docs, size, single, first):
    size = size or 101
    out, rest = docs[:size], docs[size:]
    cid = 0
    if rest and not single:
        cid = next(_cursor_ids)
        _cursors[cid] = (ns, rest)
    key = "firstBatch" if first else "nextBatch"
    return {"cursor": {key: out, "id": bson.int64.Int64(cid), "ns": ns}, "ok": 1.0}


def run_command(cmd, seqs):
    name = next(iter(cmd))
    db = cmd.get("$db", "admin")
    if name.lower() in ("hello", "ismaster"):
        return {"ismaster": True, "isWritablePrimary": True, "helloOk": True,
                "maxBsonObjectSize": 16 * 1024 * 1024, "maxMessageSizeBytes": 48000000,
                "maxWriteBatchSize": 100000, "logicalSessionTimeoutMinutes": 30,
                "minWireVersion": 0, "maxWireVersion": 13, "readOnly": False, "ok": 1.0}
    if name in ("ping", "endSessions", "createIndexes"):
        return {"ok": 1.0}
    if name.lower() == "buildinfo":
        return {"version": "5.0.0", "versionArray": [5, 0, 0, 0], "ok": 1.0}
    ns = "%s.%s" % (db, cmd[name])
    with _lock:
        if name == "drop":
            if _collections.pop(ns, None) is None:
                return _err(26, "NamespaceNotFound", "ns not found")
            return {"ok": 1.0}
        store = _collections.setdefault(ns, {})
        if name == "insert":
            docs = cmd.get("documents") or seqs.get("documents", [])
            errors = []
            for i, d in enumerate(docs):
                if d["_id"] in store:
                    errors.append({"index": i, "code": 11000, "errmsg": "E11000 duplicate key"})
                    if cmd.get("ordered", True):
                        break
                else:
                    store[d["_id"]] = d
            reply = {"n": len(docs) - len(errors), "ok": 1.0}
            if errors:
                reply["writeErrors"] = errors
            return reply
        if name == "find":
            try:
                docs = _matching(store, cmd.get("filter", {}))
            except ValueError as e:
                return _err(2, "BadValue", str(e))
            if cmd.get("limit"):
                docs = docs[:cmd["limit"]]
            return _batch(ns, docs, cmd.get("batchSize"), cmd.get("singleBatch"), True)
        if name == "update":
            n = modified = 0
            for u in cmd.get("updates") or seqs.get("updates", []):
                for d in _matching(store, u["q"])[:1]:
                    n += 1
                    modified += 1
                    for k, v in u["u"].get("$inc", {}).items():
                        d[k] = d.get(k, 0) + v
                    d.update(u["u"].get("$set", {}))
            return {"n": n, "nModified": modified, "ok": 1.0}
    if name == "getMore":
        with _lock:
            entry = _cursors.pop(int(cmd["getMore"]), None)
        if entry is None:
            return _err(43, "CursorNotFound", "cursor not found")
        with _lock:
            return _batch(entry[0], entry[1], cmd.get("batchSize"), False, False)
    if name == "killCursors":
        with _lock:
            for c in cmd.get("cursors", []):
                _cursors.pop(int(c), None)
        return {"ok": 1.0}
    return _err(59, "CommandNotFound", "no such command: '%s'" % name)


class Handler(socketserver.BaseRequestHandler):
    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.request.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def _send(self, request_id, opcode, body):
        header = struct.pack("<iiii", 16 + len(body), next(_request_ids), request_id, opcode)
        self.request.sendall(header + body)

    def handle(self):
        try:
            while True:
                length, request_id, _, opcode = struct.unpack("<iiii", self._read(16))
                body = self._read(length - 16)
                if opcode == OP_QUERY:
                    pos = body.index(b"\0", 4) + 1 + 8
                    size = struct.unpack_from("<i", body, pos)[0]
                    query = bson.BSON(body[pos:pos + size]).decode()
                    reply = bson.BSON.encode(run_command(query, {}))
                    self._send(request_id, OP_REPLY, struct.pack("<iqii", 0, 0, 0, 1) + reply)
                elif opcode == OP_MSG:
                    flags = struct.unpack_from("<I", body)[0]
                    end = len(body) - (4 if flags & 1 else 0)
                    pos, cmd, seqs = 4, None, {}
                    while pos < end:
                        kind = body[pos]
                        pos += 1
                        size = struct.unpack_from("<i", body, pos)[0]
                        if kind == 0:
                            cmd = bson.BSON(body[pos:pos + size]).decode()
                        else:
                            ident_end = body.index(b"\0", pos + 4)
                            ident = body[pos + 4:ident_end].decode()
                            seqs[ident] = bson.decode_all(body[ident_end + 1:pos + size])
                        pos += size
                    reply = run_command(cmd, seqs)
                    if not flags & 2:  # moreToCome: no reply
                        self._send(request_id, OP_MSG,
                                   struct.pack("<IB", 0, 0) + bson.BSON.encode(reply))
                else:
                    return
        except (EOFError, ConnectionError):
            return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--port-file")
    args = ap.parse_args()
    with Server(("127.0.0.1", args.port), Handler) as srv:
        if args.port_file:
            with open(args.port_file + ".tmp", "w") as f:
                f.write("%d\n" % srv.server_address[1])
            os.rename(args.port_file + ".tmp", args.port_file)
        srv.serve_forever()


if __name__ == "__main__":
    main()
