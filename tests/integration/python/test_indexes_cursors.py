"""Indexes, unique violations, cursors and admin commands through pymongo 3.11."""

import pytest
from bson import Int64
from pymongo import ASCENDING, DESCENDING, monitoring
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure


class Recorder(monitoring.CommandListener):
    def __init__(self):
        self.events = []

    def started(self, event):
        self.events.append(("started", event.command_name, event.command))

    def succeeded(self, event):
        self.events.append(("succeeded", event.command_name, event.reply))

    def failed(self, event):
        self.events.append(("failed", event.command_name, event.failure))

    def of(self, kind, name):
        return [e[2] for e in self.events if e[0] == kind and e[1] == name]


@pytest.fixture(scope="module")
def recorder():
    return Recorder()


@pytest.fixture(scope="module")
def mclient(server, recorder):
    """A client whose commands are recorded."""
    return server.client(event_listeners=[recorder])


def test_create_list_drop_index(db):
    db.c.insert_one({"a": 1, "b": 2})
    assert db.c.create_index([("a", ASCENDING)]) == "a_1"
    assert db.c.create_index([("a", ASCENDING), ("b", DESCENDING)]) == "a_1_b_-1"
    assert db.c.create_index("b", name="by_b") == "by_b"
    assert db.c.create_index([("a", ASCENDING)]) == "a_1"  # same index again: no-op
    info = db.c.index_information()
    assert sorted(info) == ["_id_", "a_1", "a_1_b_-1", "by_b"]
    assert info["_id_"]["key"] == [("_id", 1)]
    assert info["a_1_b_-1"]["key"] == [("a", 1), ("b", -1)]
    db.c.drop_index("a_1")
    assert sorted(i["name"] for i in db.c.list_indexes()) == ["_id_", "a_1_b_-1", "by_b"]
    with pytest.raises(OperationFailure) as exc:
        db.c.drop_index("no_such_index")
    assert exc.value.code == 27  # IndexNotFound
    with pytest.raises(OperationFailure):
        db.c.drop_index("_id_")
    db.c.drop_indexes()
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]
    assert db.c.count_documents({"a": 1}) == 1


def test_unique_index_duplicate_key(db):
    db.c.create_index("email", unique=True)
    assert db.c.index_information()["email_1"].get("unique") is True
    db.c.insert_one({"_id": 1, "email": "a@x"})
    with pytest.raises(DuplicateKeyError) as exc:
        db.c.insert_one({"_id": 2, "email": "a@x"})
    err = exc.value
    assert err.code == 11000
    assert "E11000 duplicate key error" in str(err)
    assert "email_1" in str(err)
    assert err.details.get("keyPattern") == {"email": 1}
    assert err.details.get("keyValue") == {"email": "a@x"}
    assert db.c.count_documents({}) == 1
    db.c.insert_one({"_id": 3, "email": "b@x"})
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"_id": 3}, {"$set": {"email": "a@x"}})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 1, "email": "c@x"})  # the _id_ index


def test_insert_many_duplicate_is_bulk_write_error(db):
    db.c.create_index("u", unique=True)
    docs = [{"_id": 1, "u": 1}, {"_id": 2, "u": 2}, {"_id": 3, "u": 1}, {"_id": 4, "u": 4}]
    with pytest.raises(BulkWriteError) as exc:
        db.c.insert_many(docs)
    details = exc.value.details
    assert details["nInserted"] == 2
    assert [(e["index"], e["code"]) for e in details["writeErrors"]] == [(2, 11000)]
    assert sorted(d["_id"] for d in db.c.find()) == [1, 2]
    more = [{"_id": 5, "u": 1}, {"_id": 6, "u": 6}, {"_id": 2, "u": 7}, {"_id": 8, "u": 8}]
    with pytest.raises(BulkWriteError) as exc:
        db.c.insert_many(more, ordered=False)
    details = exc.value.details
    assert details["nInserted"] == 2
    assert sorted(e["index"] for e in details["writeErrors"]) == [0, 2]
    assert sorted(d["_id"] for d in db.c.find()) == [1, 2, 6, 8]


def test_unique_index_over_duplicates_fails(db):
    db.c.insert_many([{"v": 1}, {"v": 1}])
    with pytest.raises(OperationFailure) as exc:
        db.c.create_index("v", unique=True)
    assert exc.value.code == 11000
    assert sorted(db.c.index_information()) == ["_id_"]


def test_cursor_batches_and_get_more(mclient, recorder, db):
    coll = mclient[db.name].c
    coll.insert_many([{"_id": i, "pad": "x" * 50} for i in range(250)])
    recorder.events.clear()
    got = [d["_id"] for d in coll.find(sort=[("_id", 1)], batch_size=20)]
    assert got == list(range(250))
    finds = recorder.of("succeeded", "find")
    assert len(finds) == 1
    assert len(finds[0]["cursor"]["firstBatch"]) == 20
    assert finds[0]["cursor"]["ns"] == f"{db.name}.c"
    get_mores = recorder.of("succeeded", "getMore")
    assert 12 <= len(get_mores) <= 13
    assert all(len(g["cursor"]["nextBatch"]) == 20 for g in get_mores[:-1])
    assert get_mores[-1]["cursor"]["id"] == 0
    # getMore's collection and cursor id match what find returned
    sent = recorder.of("started", "getMore")
    assert all(s["getMore"] == finds[0]["cursor"]["id"] for s in sent)
    assert all(s["collection"] == "c" for s in sent)
    assert recorder.of("started", "killCursors") == []


def test_cursor_close_kills_cursor(mclient, recorder, db):
    coll = mclient[db.name].c
    coll.insert_many([{"_id": i} for i in range(100)])
    recorder.events.clear()
    cursor = coll.find(sort=[("_id", 1)], batch_size=10)
    assert [next(cursor)["_id"] for _ in range(15)] == list(range(15))
    cursor_id = cursor.cursor_id
    assert cursor_id
    cursor.close()
    kills = recorder.of("succeeded", "killCursors")
    assert len(kills) == 1
    assert list(kills[0]["cursorsKilled"]) == [cursor_id]
    with pytest.raises(OperationFailure) as exc:
        mclient[db.name].command("getMore", Int64(cursor_id), collection="c")
    assert exc.value.code == 43  # CursorNotFound


def test_limit_with_batch_size_closes_cursor(mclient, recorder, db):
    coll = mclient[db.name].c
    coll.insert_many([{"_id": i} for i in range(50)])
    recorder.events.clear()
    got = [d["_id"] for d in coll.find(sort=[("_id", 1)], batch_size=10, limit=25)]
    assert got == list(range(25))
    assert recorder.of("started", "killCursors") == []


def test_unknown_get_more_and_kill_cursors(db):
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as exc:
        db.command("getMore", Int64(1234567890123), collection="c")
    assert exc.value.code == 43
    res = db.command("killCursors", "c", cursors=[Int64(1234567890123)])
    assert res["cursorsNotFound"] == [1234567890123]
    assert res["cursorsKilled"] == []


def test_list_databases_and_collections(client, db):
    db.alpha.insert_one({"a": 1})
    db.create_collection("beta")
    assert db.name in client.list_database_names()
    assert {"alpha", "beta"} <= set(db.list_collection_names())
    entry = [d for d in client.list_databases() if d["name"] == db.name][0]
    assert entry["empty"] is False
    infos = list(db.list_collections(filter={"name": "alpha"}))
    assert len(infos) == 1 and infos[0]["type"] == "collection"


def test_drop_and_drop_database(client, db):
    db.gone.insert_many([{"a": 1}, {"a": 2}])
    db.gone.create_index("a")
    db.drop_collection("gone")
    assert "gone" not in db.list_collection_names()
    assert db.gone.count_documents({}) == 0
    db.drop_collection("never_existed")  # pymongo ignores NamespaceNotFound
    db.gone.insert_one({"b": 1})
    assert [i["name"] for i in db.gone.list_indexes()] == ["_id_"]
    client.drop_database(db.name)
    assert db.name not in client.list_database_names()
    assert list(db.gone.find()) == []


def test_rename_collection(db):
    db.src.insert_many([{"_id": 1}, {"_id": 2}])
    db.src.create_index("q")
    db.src.rename("dst")
    names = db.list_collection_names()
    assert "dst" in names and "src" not in names
    assert sorted(d["_id"] for d in db.dst.find()) == [1, 2]
    assert "q_1" in db.dst.index_information()
    db.other.insert_one({"_id": "o"})
    with pytest.raises(OperationFailure) as exc:
        db.other.rename("dst")
    assert exc.value.code == 48  # NamespaceExists
    db.other.rename("dst", dropTarget=True)
    assert list(db.dst.find()) == [{"_id": "o"}]


def test_unknown_command(db):
    with pytest.raises(OperationFailure) as exc:
        db.command("noSuchCommandXyz")
    assert exc.value.code == 59
    assert exc.value.details["codeName"] == "CommandNotFound"
    assert exc.value.details["ok"] == 0
    assert db.command("ping")["ok"] == 1


def test_find_on_missing_collection(db):
    assert list(db.nothing.find({"a": 1})) == []
    assert db.nothing.find_one() is None
    assert db.nothing.count_documents({}) == 0
    assert db.nothing.delete_many({}).deleted_count == 0
    assert "nothing" not in db.list_collection_names()


def test_handshake_fields(client):
    hello = client.admin.command("isMaster")
    assert hello["ismaster"] is True
    assert hello["maxWireVersion"] >= 9
    assert hello["minWireVersion"] <= 9  # pymongo 3.11 supports up to 9
    assert hello["maxBsonObjectSize"] == 16 * 1024 * 1024
    assert hello["maxMessageSizeBytes"] == 48_000_000
    assert hello["maxWriteBatchSize"] == 100_000
