#pragma once

// Helpers shared by the query tests (header-only; test code only).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::query::test {

// Copies `obj`, renaming every field whose name starts with '%' to start with '$' instead, at any
// depth. The JSON case files write "%type"/"%regex"/"%options" where libbson's extended-JSON
// parser would otherwise read "$type"/"$regex" as legacy type wrappers.
inline void rewriteInto(bson::BsonView obj, bson::BsonBuilder* b) {
    for (bson::BsonElement e : obj) {
        std::string name(e.fieldName());
        if (!name.empty() && name[0] == '%') name[0] = '$';
        if (e.isObject()) {
            b->startObject(name);
            rewriteInto(e.objValue(), b);
            b->end();
        } else if (e.isArray()) {
            b->startArray(name);
            rewriteInto(e.objValue(), b);
            b->end();
        } else {
            b->appendElementAs(e, name);
        }
    }
}

inline bson::BsonObj rewriteDollars(bson::BsonView obj) {
    bson::BsonBuilder b;
    rewriteInto(obj, &b);
    return b.obj();
}

inline bson::BsonObj json(std::string_view s) { return rewriteDollars(bson::fromJson(s)); }

inline std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Loads tests/query/<name>: a JSON array of case documents.
inline std::vector<bson::BsonObj> loadCases(const std::string& name) {
    std::string text = readFile(std::string(TESSERA_QUERY_CASES_DIR) + "/" + name);
    auto parsed = bson::BsonObj::fromJson(text);
    std::vector<bson::BsonObj> out;
    if (!parsed.isOK()) return out;
    for (bson::BsonElement e : parsed.getValue()) out.push_back(rewriteDollars(e.objValue()));
    return out;
}

}  // namespace tessera::query::test
