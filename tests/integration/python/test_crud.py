"""CRUD through pymongo (Debian's 3.11). pymongo sends insert/update/delete as OP_MSG kind-1
document sequences, so these also test that wire path."""

import datetime
import re

import pytest
from bson import Binary, Decimal128, Int64, ObjectId, SON
from bson.codec_options import CodecOptions
from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import OperationFailure, WriteError
from pymongo.write_concern import WriteConcern


def ids(cursor):
    return [d["_id"] for d in cursor]


def test_insert_one_generates_object_id(db):
    res = db.c.insert_one({"name": "ada", "age": 36})
    assert res.acknowledged
    assert isinstance(res.inserted_id, ObjectId)
    assert db.c.find_one({"name": "ada"}) == {"_id": res.inserted_id, "name": "ada", "age": 36}


def test_bson_types_and_field_order_round_trip(db):
    when = datetime.datetime(2024, 2, 29, 12, 34, 56, 789000)
    oid = ObjectId()
    doc = SON(
        [
            ("_id", 1),
            ("i32", 5),
            ("i64", Int64(1 << 40)),
            ("small64", Int64(7)),
            ("dbl", 3.0),
            ("dec", Decimal128("1.10")),
            ("str", "h\u00e9llo"),
            ("t", True),
            ("nul", None),
            ("date", when),
            ("oid", oid),
            ("bin", Binary(b"\x00\x01\xff", 0)),
            ("arr", [1, "a", {"x": 1}, [2]]),
            ("sub", SON([("z", 1), ("a", {"b": "c"})])),
        ]
    )
    db.c.insert_one(doc)
    got = db.get_collection("c", codec_options=CodecOptions(document_class=SON)).find_one({"_id": 1})
    assert list(got.keys()) == list(doc.keys())
    assert type(got["i32"]) is int and got["i32"] == 5
    assert isinstance(got["i64"], Int64) and got["i64"] == 1 << 40
    assert isinstance(got["small64"], Int64), "int64 must stay int64 even when small"
    assert type(got["dbl"]) is float and got["dbl"] == 3.0
    assert got["dec"] == Decimal128("1.10")
    assert got["str"] == "h\u00e9llo"
    assert got["t"] is True and got["nul"] is None
    assert got["date"] == when
    assert got["oid"] == oid
    assert got["bin"] == b"\x00\x01\xff"
    assert got["arr"] == [1, "a", {"x": 1}, [2]]
    assert list(got["sub"].keys()) == ["z", "a"]


def test_insert_many(db):
    res = db.c.insert_many([{"_id": "a"}, {"_id": "b"}, {"x": 1}])
    assert len(res.inserted_ids) == 3
    assert res.inserted_ids[:2] == ["a", "b"]
    assert isinstance(res.inserted_ids[2], ObjectId)
    assert db.c.count_documents({}) == 3


def test_large_insert_many_arrives_complete(db):
    # One big kind-1 "documents" sequence (pymongo splits only past the server limits).
    docs = [{"_id": i, "pad": "p" * 200} for i in range(5000)]
    res = db.c.insert_many(docs)
    assert len(res.inserted_ids) == 5000
    assert db.c.count_documents({}) == 5000
    assert db.c.find_one({"_id": 4999})["pad"] == "p" * 200


def test_find_filter_projection_sort_skip_limit(db):
    db.c.insert_many(
        [
            {"_id": 1, "a": 5, "b": "x", "tags": ["p"]},
            {"_id": 2, "a": 3, "b": "y"},
            {"_id": 3, "a": 9, "b": "x"},
            {"_id": 4, "a": 3, "b": "z"},
            {"_id": 5, "b": "w"},
        ]
    )
    asc = [("_id", ASCENDING)]
    assert ids(db.c.find({"a": {"$gt": 3}}, sort=asc)) == [1, 3]
    assert ids(db.c.find({"a": {"$gte": 3, "$lt": 9}}, sort=asc)) == [1, 2, 4]
    assert ids(db.c.find({"a": {"$in": [3, 9]}}, sort=asc)) == [2, 3, 4]
    assert ids(db.c.find({"a": {"$ne": 3}}, sort=asc)) == [1, 3, 5]
    assert ids(db.c.find({"a": {"$exists": False}})) == [5]
    assert ids(db.c.find({"$or": [{"a": 9}, {"b": "y"}]}, sort=asc)) == [2, 3]
    assert ids(db.c.find({"b": re.compile("^[wx]$")}, sort=[("_id", DESCENDING)])) == [5, 3, 1]
    assert ids(db.c.find({"b": {"$regex": "^X", "$options": "i"}}, sort=asc)) == [1, 3]
    assert ids(db.c.find({}, sort=[("a", ASCENDING), ("_id", DESCENDING)])) == [5, 4, 2, 1, 3]
    assert ids(db.c.find({}, sort=asc, skip=1, limit=2)) == [2, 3]
    assert ids(db.c.find({}).sort("_id", DESCENDING).limit(2)) == [5, 4]
    assert list(db.c.find({"_id": 1}, {"a": 1})) == [{"_id": 1, "a": 5}]
    assert list(db.c.find({"_id": 1}, {"_id": 0, "b": 1})) == [{"b": "x"}]
    assert list(db.c.find({"_id": 1}, {"tags": 0, "a": 0})) == [{"_id": 1, "b": "x"}]
    assert list(db.c.find({"_id": 1}, {"_id": 1})) == [{"_id": 1}]
    assert db.c.find_one({"a": 100}) is None


def test_update_operators_and_counts(db):
    db.c.insert_many(
        [{"_id": 1, "n": 1, "tags": ["a"], "gone": True}, {"_id": 2, "n": 2}, {"_id": 3, "n": 3}]
    )
    res = db.c.update_one(
        {"_id": 1}, {"$set": {"s": "x", "deep.er": 1}, "$inc": {"n": 10}, "$unset": {"gone": ""}}
    )
    assert (res.matched_count, res.modified_count, res.upserted_id) == (1, 1, None)
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "n": 11, "tags": ["a"], "s": "x", "deep": {"er": 1}}
    assert db.c.update_one({"_id": 1}, {"$push": {"tags": "b"}}).modified_count == 1
    res = db.c.update_one({"_id": 1}, {"$addToSet": {"tags": "a"}})
    assert (res.matched_count, res.modified_count) == (1, 0)
    res = db.c.update_one({"_id": 1}, {"$set": {"s": "x"}})
    assert (res.matched_count, res.modified_count) == (1, 0)
    res = db.c.update_many({"n": {"$lte": 3}}, {"$inc": {"n": 100}, "$set": {"m": True}})
    assert (res.matched_count, res.modified_count) == (2, 2)
    assert [d["n"] for d in db.c.find(sort=[("_id", 1)])] == [11, 102, 103]
    res = db.c.update_many({"nothing": 1}, {"$set": {"x": 1}})
    assert (res.matched_count, res.modified_count) == (0, 0)


def test_upsert(db):
    res = db.c.update_one(
        {"k": "new", "n": {"$gt": 5}},
        {"$set": {"v": 1}, "$setOnInsert": {"created": True}},
        upsert=True,
    )
    assert res.matched_count == 0 and isinstance(res.upserted_id, ObjectId)
    assert db.c.find_one({"_id": res.upserted_id}) == {
        "_id": res.upserted_id,
        "k": "new",
        "v": 1,
        "created": True,
    }
    res = db.c.update_one(
        {"k": "new"}, {"$set": {"v": 2}, "$setOnInsert": {"created": False}}, upsert=True
    )
    assert res.matched_count == 1 and res.upserted_id is None
    assert db.c.find_one({"k": "new"})["created"] is True
    res = db.c.update_many({"_id": "given"}, {"$inc": {"c": 1}}, upsert=True)
    assert res.upserted_id == "given"
    assert db.c.find_one({"_id": "given"}) == {"_id": "given", "c": 1}


def test_replace_one(db):
    db.c.insert_one({"_id": 7, "a": 1, "b": 2})
    res = db.c.replace_one({"a": 1}, {"c": 3})
    assert (res.matched_count, res.modified_count) == (1, 1)
    assert db.c.find_one({"_id": 7}) == {"_id": 7, "c": 3}
    res = db.c.replace_one({"_id": 8}, {"d": 4}, upsert=True)
    assert res.upserted_id == 8
    assert db.c.find_one({"_id": 8}) == {"_id": 8, "d": 4}
    assert db.c.replace_one({"_id": 99}, {"d": 4}).matched_count == 0


def test_delete_one_and_many(db):
    db.c.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(1, 6)])
    assert db.c.delete_one({"even": False}).deleted_count == 1
    assert db.c.count_documents({"even": False}) == 2
    assert db.c.delete_many({"even": True}).deleted_count == 2
    assert db.c.delete_many({"even": True}).deleted_count == 0
    assert db.c.delete_many({}).deleted_count == 2
    assert db.c.count_documents({}) == 0


def test_find_one_and_modify(db):
    db.c.insert_many([{"_id": 1, "q": "x", "n": 1}, {"_id": 2, "q": "x", "n": 2}])
    doc = db.c.find_one_and_update(
        {"q": "x"}, {"$inc": {"n": 10}}, sort=[("n", DESCENDING)],
        return_document=ReturnDocument.BEFORE,
    )
    assert doc == {"_id": 2, "q": "x", "n": 2}
    doc = db.c.find_one_and_update(
        {"q": "x"}, {"$inc": {"n": 10}}, sort=[("n", ASCENDING)], projection={"n": 1, "_id": 0},
        return_document=ReturnDocument.AFTER,
    )
    assert doc == {"n": 11}
    assert db.c.find_one_and_update({"q": "none"}, {"$set": {"n": 0}}) is None
    doc = db.c.find_one_and_update(
        {"_id": 3}, {"$set": {"q": "y"}}, upsert=True, return_document=ReturnDocument.AFTER
    )
    assert doc == {"_id": 3, "q": "y"}
    doc = db.c.find_one_and_replace({"_id": 1}, {"r": True}, return_document=ReturnDocument.AFTER)
    assert doc == {"_id": 1, "r": True}
    doc = db.c.find_one_and_delete({}, sort=[("_id", DESCENDING)])
    assert doc == {"_id": 3, "q": "y"}
    assert db.c.find_one({"_id": 3}) is None
    assert db.c.find_one_and_delete({"_id": 3}) is None


def test_counts_and_distinct(db):
    assert db.c.count_documents({}) == 0
    assert db.c.estimated_document_count() == 0
    db.c.insert_many([{"_id": i, "odd": i % 2 == 1, "tags": ["t%d" % (i % 3), "all"]} for i in range(30)])
    assert db.c.count_documents({}) == 30
    assert db.c.count_documents({"odd": True}) == 15
    assert db.c.count_documents({"odd": True}, skip=10) == 5
    assert db.c.count_documents({}, limit=7) == 7
    assert db.c.estimated_document_count() == 30
    assert sorted(db.c.distinct("tags")) == ["all", "t0", "t1", "t2"]
    assert sorted(db.c.distinct("odd")) == [False, True]
    assert sorted(db.c.distinct("_id", {"_id": {"$lt": 3}})) == [0, 1, 2]
    assert db.c.distinct("missing") == []


def test_dotted_paths_and_array_queries(db):
    db.c.insert_many(
        [
            {"_id": 1, "a": {"b": 1, "c": {"d": "x"}}, "scores": [82, 90], "tags": ["r", "s", "t"]},
            {"_id": 2, "a": {"b": 2}, "scores": [70, 95], "tags": ["r", "s"]},
            {"_id": 3, "items": [{"sku": "x", "qty": 2}, {"sku": "y", "qty": 10}], "tags": ["s"]},
            {"_id": 4, "items": [{"sku": "x", "qty": 8}], "tags": []},
        ]
    )

    def q(f):
        return ids(db.c.find(f, sort=[("_id", 1)]))

    assert q({"a.b": 1}) == [1]
    assert q({"a.c.d": "x"}) == [1]
    assert q({"items.sku": "y"}) == [3]
    assert q({"tags": "s"}) == [1, 2, 3]
    assert q({"tags": ["r", "s"]}) == [2]
    assert q({"scores.1": {"$gt": 92}}) == [2]
    assert q({"scores": {"$gte": 80, "$lt": 85}}) == [1, 2]
    assert q({"scores": {"$elemMatch": {"$gte": 80, "$lt": 85}}}) == [1]
    assert q({"items": {"$elemMatch": {"sku": "x", "qty": {"$gt": 5}}}}) == [4]
    assert q({"tags": {"$all": ["r", "s"]}}) == [1, 2]
    assert q({"tags": {"$size": 2}}) == [2]
    assert q({"tags": {"$size": 0}}) == [4]
    assert db.c.find_one({"_id": 1}, {"a.c.d": 1, "_id": 0}) == {"a": {"c": {"d": "x"}}}
    db.c.update_one({"_id": 2}, {"$set": {"a.e.f": 5}})
    assert db.c.find_one({"_id": 2})["a"] == {"b": 2, "e": {"f": 5}}


def test_unacknowledged_writes_then_read(server, db):
    # One pooled connection: the server handles a connection's messages in order.
    client = server.client(maxPoolSize=1)
    c = client[db.name].get_collection("w0", write_concern=WriteConcern(w=0))
    res = c.insert_one({"_id": 1, "v": "a"})
    assert not res.acknowledged
    c.insert_many([{"_id": 2}, {"_id": 3}])
    c.update_one({"_id": 1}, {"$set": {"v": "b"}})
    c.delete_one({"_id": 3})
    c.insert_one({"_id": 2})  # a duplicate, silently dropped with w:0
    acked = client[db.name].w0
    assert list(acked.find(sort=[("_id", 1)])) == [{"_id": 1, "v": "b"}, {"_id": 2}]


def test_invalid_update_operator(db):
    db.c.insert_one({"_id": 1, "a": 1})
    with pytest.raises(WriteError) as exc:
        db.c.update_one({"_id": 1}, {"$bogus": {"a": 2}})
    assert exc.value.code == 9  # FailedToParse
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "a": 1}


def test_invalid_query_operator(db):
    db.c.insert_one({"a": 1})
    with pytest.raises(OperationFailure) as exc:
        list(db.c.find({"a": {"$nosuchop": 1}}))
    assert exc.value.code == 2  # BadValue
