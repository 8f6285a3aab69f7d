#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson_obj.h"
#include "bson/compare.h"
#include "query/match_details.h"
#include "query/path.h"

namespace tessera::query {

// The parsed form of a query filter: a tree of MatchExpression nodes (MongoDB's
// MatchExpression). Nodes are immutable after parsing and safe to share between threads.
// Values (BsonElements) inside nodes point into the filter copy owned by the Matcher that parsed
// them; a node never outlives its Matcher.
//
// Read-only accessors (matchType, path, numChildren/child, rhs, ...) let a planner walk the tree
// to find indexable predicates.
enum class MatchType {
    kAnd,
    kOr,
    kNor,
    kNot,
    kAlwaysTrue,
    kAlwaysFalse,
    kEq,
    kLt,
    kLte,
    kGt,
    kGte,
    kIn,
    kRegex,
    kMod,
    kExists,
    kType,
    kSize,
    kElemMatchObject,
    kElemMatchValue,
};

class MatchExpression {
  public:
    explicit MatchExpression(MatchType type) : _type(type) {}
    virtual ~MatchExpression() = default;
    MatchExpression(const MatchExpression&) = delete;
    MatchExpression& operator=(const MatchExpression&) = delete;

    MatchType matchType() const { return _type; }
    bool isLogical() const {
        return _type == MatchType::kAnd || _type == MatchType::kOr || _type == MatchType::kNor ||
               _type == MatchType::kNot;
    }

    // Whether the whole document matches. `details` (optional) receives the elemMatchKey.
    virtual bool matches(bson::BsonView doc, MatchDetails* details) const = 0;
    // Whether one value matches, ignoring this node's path (used under $elemMatch value form,
    // e.g. {a: {$elemMatch: {$gt: 1, $lt: 5}}} applies $gt/$lt to each element).
    virtual bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const = 0;

    // The path this node tests; empty for logical nodes and $elemMatch value children.
    virtual const std::string& path() const;
    virtual size_t numChildren() const { return 0; }
    virtual const MatchExpression* child(size_t i) const { return nullptr; }

    // Makes string comparisons of this subtree ($eq/$lt/.../$in equalities, not $regex) use
    // `collator` (nullptr: binary). Called once after parsing, before any matches(); the
    // collator must outlive the tree (Matcher keeps it alive).
    virtual void setCollator(const bson::StringComparator* collator) {}

  private:
    MatchType _type;
};

// $and / $or / $nor / $not, and the implicit AND of a filter's fields.
class LogicalMatchExpression : public MatchExpression {
  public:
    using MatchExpression::MatchExpression;
    void add(std::unique_ptr<MatchExpression> e) { _children.push_back(std::move(e)); }
    size_t numChildren() const override { return _children.size(); }
    const MatchExpression* child(size_t i) const override { return _children[i].get(); }
    void setCollator(const bson::StringComparator* collator) override {
        for (auto& c : _children) c->setCollator(collator);
    }
    bool matches(bson::BsonView doc, MatchDetails* details) const override;
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;
    // Moves the children out (used when flattening).
    std::vector<std::unique_ptr<MatchExpression>> releaseChildren() { return std::move(_children); }

  private:
    std::vector<std::unique_ptr<MatchExpression>> _children;
};

// kNot has exactly one child.
class NotMatchExpression : public LogicalMatchExpression {
  public:
    explicit NotMatchExpression(std::unique_ptr<MatchExpression> child)
        : LogicalMatchExpression(MatchType::kNot) {
        add(std::move(child));
    }
};

class AlwaysBooleanMatchExpression : public MatchExpression {
  public:
    explicit AlwaysBooleanMatchExpression(bool value)
        : MatchExpression(value ? MatchType::kAlwaysTrue : MatchType::kAlwaysFalse),
          _value(value) {}
    bool matches(bson::BsonView, MatchDetails*) const override { return _value; }
    bool matchesSingleElement(const bson::BsonElement&, MatchDetails*) const override {
        return _value;
    }

  private:
    bool _value;
};

// A predicate on the values reached by a path (see visitPath): the document matches when any
// value matches.
class PathMatchExpression : public MatchExpression {
  public:
    PathMatchExpression(MatchType type, std::string_view path,
                        LeafArrayBehavior leaf = LeafArrayBehavior::kTraverse)
        : MatchExpression(type), _pathString(path), _path(path), _leaf(leaf) {}
    const std::string& path() const override { return _pathString; }
    const FieldPath& fieldPath() const { return _path; }
    bool matches(bson::BsonView doc, MatchDetails* details) const override;

  private:
    std::string _pathString;
    FieldPath _path;
    LeafArrayBehavior _leaf;
};

// $eq (and implicit equality), $lt, $lte, $gt, $gte against one value.
class ComparisonMatchExpression : public PathMatchExpression {
  public:
    ComparisonMatchExpression(MatchType type, std::string_view path, bson::BsonElement rhs)
        : PathMatchExpression(type, path), _rhs(rhs) {}
    const bson::BsonElement& rhs() const { return _rhs; }
    void setCollator(const bson::StringComparator* collator) override { _collator = collator; }
    const bson::StringComparator* collator() const { return _collator; }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;

  private:
    bson::BsonElement _rhs;
    const bson::StringComparator* _collator = nullptr;
};

// A compiled PCRE2 regular expression with MongoDB's flags (i, m, s, x; UTF-8).
class CompiledRegex {
  public:
    static StatusWith<std::shared_ptr<const CompiledRegex>> compile(std::string_view pattern,
                                                                    std::string_view flags);
    // PCRE2 compile options for MongoDB's regex flags (i m s x; u accepted, UTF-8 always on);
    // 51108 for any other flag. Shared with the $regex* aggregation expressions.
    static StatusWith<uint32_t> compileOptions(std::string_view flags);
    ~CompiledRegex();
    bool matches(std::string_view subject) const;
    const std::string& pattern() const { return _pattern; }
    const std::string& flags() const { return _flags; }

  private:
    CompiledRegex() = default;
    std::string _pattern;
    std::string _flags;
    void* _code = nullptr;  // pcre2_code*
};

// $regex and regex literals: matches strings and symbols by the pattern, and regex values equal
// to it (same pattern and flags).
class RegexMatchExpression : public PathMatchExpression {
  public:
    RegexMatchExpression(std::string_view path, std::shared_ptr<const CompiledRegex> re)
        : PathMatchExpression(MatchType::kRegex, path), _re(std::move(re)) {}
    const CompiledRegex& regex() const { return *_re; }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;

  private:
    std::shared_ptr<const CompiledRegex> _re;
};

// $in (and, under a $not, $nin). A null among the values also matches missing and undefined.
class InMatchExpression : public PathMatchExpression {
  public:
    explicit InMatchExpression(std::string_view path) : PathMatchExpression(MatchType::kIn, path) {}
    void addEquality(bson::BsonElement e);
    void addRegex(std::shared_ptr<const CompiledRegex> re) { _regexes.push_back(std::move(re)); }
    // Sorted (by compareElementValues), de-duplicated equality values.
    const std::vector<bson::BsonElement>& equalities() const { return _equalities; }
    const std::vector<std::shared_ptr<const CompiledRegex>>& regexes() const { return _regexes; }
    bool hasNull() const { return _hasNull; }
    void finish();  // sorts the equalities; call once after adding
    // Re-sorts and de-duplicates the equalities by the collation (setCollator calls finish()).
    void setCollator(const bson::StringComparator* collator) override {
        _collator = collator;
        finish();
    }
    const bson::StringComparator* collator() const { return _collator; }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;

  private:
    const bson::StringComparator* _collator = nullptr;
    std::vector<bson::BsonElement> _equalities;
    std::vector<std::shared_ptr<const CompiledRegex>> _regexes;
    bool _hasNull = false;
};

class ModMatchExpression : public PathMatchExpression {
  public:
    ModMatchExpression(std::string_view path, int64_t divisor, int64_t remainder)
        : PathMatchExpression(MatchType::kMod, path), _divisor(divisor), _remainder(remainder) {}
    int64_t divisor() const { return _divisor; }
    int64_t remainder() const { return _remainder; }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;

  private:
    int64_t _divisor;
    int64_t _remainder;
};

// {$exists: true}; {$exists: false} is NOT(this).
class ExistsMatchExpression : public PathMatchExpression {
  public:
    explicit ExistsMatchExpression(std::string_view path)
        : PathMatchExpression(MatchType::kExists, path) {}
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails*) const override {
        return !e.eoo();
    }
};

// $type: a set of BSON types, plus "number" (any numeric type).
class TypeMatchExpression : public PathMatchExpression {
  public:
    TypeMatchExpression(std::string_view path, std::vector<bson::BsonType> types, bool allNumbers)
        : PathMatchExpression(MatchType::kType, path),
          _types(std::move(types)),
          _allNumbers(allNumbers) {}
    const std::vector<bson::BsonType>& types() const { return _types; }
    bool allNumbers() const { return _allNumbers; }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;

  private:
    std::vector<bson::BsonType> _types;
    bool _allNumbers;
};

// $size: an array (the leaf array itself, not its elements) with exactly n elements.
class SizeMatchExpression : public PathMatchExpression {
  public:
    SizeMatchExpression(std::string_view path, int size)
        : PathMatchExpression(MatchType::kSize, path, LeafArrayBehavior::kNoTraversal),
          _size(size) {}
    int size() const { return _size; }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;

  private:
    int _size;
};

// {a: {$elemMatch: {b: 1, c: {$gt: 2}}}}: some element of array `a` (a document or an array)
// matches the sub-filter as a whole document.
class ElemMatchObjectMatchExpression : public PathMatchExpression {
  public:
    ElemMatchObjectMatchExpression(std::string_view path, std::unique_ptr<MatchExpression> sub)
        : PathMatchExpression(MatchType::kElemMatchObject, path, LeafArrayBehavior::kNoTraversal),
          _sub(std::move(sub)) {}
    size_t numChildren() const override { return 1; }
    const MatchExpression* child(size_t) const override { return _sub.get(); }
    void setCollator(const bson::StringComparator* collator) override {
        _sub->setCollator(collator);
    }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;

  private:
    std::unique_ptr<MatchExpression> _sub;
};

// {a: {$elemMatch: {$gt: 1, $lt: 5}}}: some element of array `a` satisfies every child
// (children apply to the element itself via matchesSingleElement).
class ElemMatchValueMatchExpression : public PathMatchExpression {
  public:
    explicit ElemMatchValueMatchExpression(std::string_view path)
        : PathMatchExpression(MatchType::kElemMatchValue, path, LeafArrayBehavior::kNoTraversal) {}
    void add(std::unique_ptr<MatchExpression> e) { _children.push_back(std::move(e)); }
    size_t numChildren() const override { return _children.size(); }
    const MatchExpression* child(size_t i) const override { return _children[i].get(); }
    void setCollator(const bson::StringComparator* collator) override {
        for (auto& c : _children) c->setCollator(collator);
    }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails* details) const override;

  private:
    std::vector<std::unique_ptr<MatchExpression>> _children;
};

}  // namespace tessera::query
