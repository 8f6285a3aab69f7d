"""Durability: what a journaled write acknowledged must survive kill -9; one dbpath, one server."""

import re
import subprocess
import threading
import time

import pytest
from pymongo import WriteConcern
from pymongo.errors import DuplicateKeyError, PyMongoError

import tessera_wire as wire

J = WriteConcern(w=1, j=True)


def test_acknowledged_journaled_writes_survive_kill9(server_factory):
    srv = server_factory()
    client = srv.client()
    coll = client.crashdb.get_collection("docs", write_concern=J)
    coll.create_index("u", unique=True)
    # 200 single inserts, 2 x 100 insert_many, then updates and deletes, all with j:true.
    for i in range(200):
        coll.insert_one({"_id": i, "u": i, "v": "one"})
    coll.insert_many([{"_id": i, "u": i, "v": "many"} for i in range(200, 300)])
    coll.insert_many([{"_id": i, "u": i, "v": "many"} for i in range(300, 400)])
    assert coll.update_many({"_id": {"$lt": 50}}, {"$set": {"v": "updated"}}).modified_count == 50
    assert coll.delete_many({"_id": {"$gte": 390}}).deleted_count == 10
    coll.replace_one({"_id": 100}, {"u": 100, "v": "replaced"})

    srv.kill9()
    assert srv.returncode == -9
    srv.restart()

    client = srv.client()
    coll = client.crashdb.docs
    docs = {d["_id"]: d for d in coll.find()}
    assert len(docs) == 390
    assert set(docs) == set(range(390))
    assert all(docs[i]["v"] == "updated" for i in range(50))
    assert all(docs[i]["v"] == "one" for i in range(50, 200) if i != 100)
    assert docs[100] == {"_id": 100, "u": 100, "v": "replaced"}
    assert all(docs[i]["v"] == "many" for i in range(200, 390))
    assert coll.count_documents({}) == 390
    assert coll.estimated_document_count() == 390
    # The index survived and is still enforced.
    assert "u_1" in coll.index_information()
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"_id": 1000, "u": 5})
    assert [d["_id"] for d in coll.find({"u": {"$gte": 385}}).sort("u", 1)] == list(range(385, 390))
    # And it keeps accepting writes.
    coll.insert_one({"_id": 1001, "u": 1001})
    assert coll.count_documents({}) == 391
    assert "crashdb" in client.list_database_names()


def test_kill9_during_concurrent_journaled_writes(server_factory):
    """Every insert acknowledged before the kill must be there after restart."""
    srv = server_factory()
    acked = []
    stop = threading.Event()
    errors = []

    def writer(offset):
        client = srv.client(retryWrites=False, serverSelectionTimeoutMS=2000)
        coll = client.crashdb.get_collection("live", write_concern=J)
        i = offset
        while not stop.is_set():
            try:
                coll.insert_one({"_id": i, "payload": "x" * 100})
            except PyMongoError as e:
                errors.append(e)
                return
            acked.append(i)
            i += 2

    threads = [threading.Thread(target=writer, args=(k,), daemon=True) for k in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while len(acked) < 300 and time.monotonic() < deadline and not errors:
        time.sleep(0.01)
    assert not errors, f"writes failed before the kill: {errors[:1]}"
    assert len(acked) >= 300, f"only {len(acked)} writes acknowledged in 20 s"
    srv.kill9()
    stop.set()
    for t in threads:
        t.join(10)
    snapshot = list(acked)

    srv.restart()
    present = {d["_id"] for d in srv.client().crashdb.live.find({}, {"_id": 1})}
    missing = sorted(set(snapshot) - present)
    assert not missing, f"{len(missing)} acknowledged documents lost, e.g. {missing[:10]}"


def test_clean_shutdown_on_sigterm_keeps_data(server_factory):
    srv = server_factory()
    srv.client().db1.c.insert_many([{"_id": i} for i in range(100)])
    assert srv.stop() == 0, f"SIGTERM should exit 0\n{srv.log_tail()}"
    srv.restart()
    assert srv.client().db1.c.count_documents({}) == 100


def test_second_server_on_same_dbpath_refuses_to_start(server_factory):
    first = server_factory()
    first.client().lockdb.c.insert_one({"_id": 1})
    second = server_factory(dbpath=first.dbpath, start=False).spawn()
    try:
        code = second.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"second server on a used dbpath is still running\n{second.log_tail()}")
    assert code != 0, f"second server exited with 0\n{second.log_tail()}"
    with open(second.stderr_path, errors="replace") as f:
        err = f.read()
    with open(second.stdout_path, errors="replace") as f:
        err += f.read()
    assert re.search(r"(?i)lock|in use|already|another", err), (
        f"no clear message about the dbpath being in use:\n{err}"
    )
    # The first server is unharmed.
    assert first.alive
    assert wire.ping(first.port)["ok"] == 1
    assert first.client().lockdb.c.find_one() == {"_id": 1}
    # The second one never listened.
    with pytest.raises(OSError):
        wire.connect(second.port, timeout=1).close()
