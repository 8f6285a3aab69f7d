#pragma once

// Byte layout of every key Tessera stores in RocksDB (see README.md, "Keyspace"). All integers
// are big-endian so that memcmp order equals numeric order.
//
//   records:  collId(8) | recordKey | ~commitTs(8)  ->  document BSON, or "" (tombstone)
//   indexes:  collId(8) | indexId(4) | keystring | [recordKey] | ~commitTs(8)
//             ->  recordKey, or "" (tombstone)
//   catalog:  "c" collId(8) -> collection entry BSON
//             "n" collId(8) -> count(8) | dataSize(8) | lastCommitTs(8)
//             "m:nextCollectionId" -> 8 bytes;  "m:format" -> "tessera-1"
//
// The recordKey is part of the index user key only for non-unique indexes; unique indexes keep
// one user key per indexed value, which is what makes the uniqueness check a single seek.

#include <cstdint>
#include <string>
#include <string_view>

#include "base/hlc.h"

namespace tessera::storage::keys {

constexpr size_t kCollIdSize = 8;
constexpr size_t kIndexIdSize = 4;
constexpr size_t kTsSize = 8;

inline void appendBigEndian64(std::string& out, uint64_t v) {
    char buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (56 - 8 * i));
    out.append(buf, 8);
}
inline void appendBigEndian32(std::string& out, uint32_t v) {
    char buf[4];
    for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>(v >> (24 - 8 * i));
    out.append(buf, 4);
}
inline uint64_t readBigEndian64(std::string_view s) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
}

// Appends the inverted commit timestamp, so that newer versions of one user key sort first.
inline void appendTs(std::string& out, Timestamp ts) { appendBigEndian64(out, ~ts.value); }
// The version suffix of a transaction's uncommitted write (an intent): Timestamp::max(), so it
// sorts before every committed version of its user key. Intents live only in their
// transaction's own write batch (rocks_transaction.h), never in the database: a reader sees them
// only through that transaction's overlay.
inline constexpr Timestamp kIntentTs = Timestamp::max();

// The commit timestamp of a versioned key.
inline Timestamp tsOf(std::string_view versionedKey) {
    return Timestamp{~readBigEndian64(versionedKey.substr(versionedKey.size() - kTsSize))};
}
// The user key (everything but the timestamp) of a versioned key.
inline std::string_view userKeyOf(std::string_view versionedKey) {
    return versionedKey.substr(0, versionedKey.size() - kTsSize);
}

// collId(8): the prefix of all of a collection's records (and of all its index entries).
inline std::string collPrefix(uint64_t collId) {
    std::string s;
    appendBigEndian64(s, collId);
    return s;
}
inline std::string indexPrefix(uint64_t collId, uint32_t indexId) {
    std::string s;
    s.reserve(kCollIdSize + kIndexIdSize);
    appendBigEndian64(s, collId);
    appendBigEndian32(s, indexId);
    return s;
}

// Catalog CF keys.
inline std::string catalogCollKey(uint64_t collId) {
    std::string s = "c";
    appendBigEndian64(s, collId);
    return s;
}
inline std::string catalogCountKey(uint64_t collId) {
    std::string s = "n";
    appendBigEndian64(s, collId);
    return s;
}
inline constexpr std::string_view kNextCollectionIdKey = "m:nextCollectionId";
inline constexpr std::string_view kFormatKey = "m:format";
// "m:rewrite:" id(8): a collection rewrite (Engine::clusterCollection) writing under that id has
// not swapped yet; open range-deletes the id's partial data (a crash mid-rewrite).
inline constexpr std::string_view kRewritePrefix = "m:rewrite:";
// "x:" key: a side record (SideRecordScope), written with the document write it accompanies.
inline constexpr std::string_view kSideRecordPrefix = "x:";
inline std::string rewriteMarkerKey(uint64_t id) {
    std::string k(kRewritePrefix);
    appendBigEndian64(k, id);
    return k;
}
inline constexpr std::string_view kFormatValue = "tessera-1";

// The smallest string greater than every string starting with `prefix` ("" if none).
inline std::string successor(std::string_view prefix) {
    std::string s(prefix);
    while (!s.empty() && static_cast<unsigned char>(s.back()) == 0xff) s.pop_back();
    if (!s.empty()) s.back() = static_cast<char>(static_cast<unsigned char>(s.back()) + 1);
    return s;
}

}  // namespace tessera::storage::keys
