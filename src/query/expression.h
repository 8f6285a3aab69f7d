#pragma once

// The aggregation expression language (MongoDB's src/mongo/db/pipeline/expression*.cpp):
// literals, field paths ("$a.b"), variables ("$$ROOT", "$$x"), operators ({$add: [...]}) and
// object expressions ({a: <expr>, b: <expr>}), plus the `$group` accumulators.
//
//   ExpressionParseContext pctx;                       // knows the variables in scope
//   ASSIGN_OR_RETURN(auto expr, Expression::parse(spec.firstElement(), pctx));
//   Variables vars;                                    // $$NOW fixed at construction
//   ASSIGN_OR_RETURN(Value v, expr->evaluate(doc, vars));
//   v.appendTo(builder, "field");                      // a missing value appends nothing
//
// Evaluation errors carry MongoDB's codes and messages (16554 "$add only supports numeric or
// date types, not string", 2 "can't $divide by zero", ...); parse errors too (168
// InvalidPipelineOperator "Unrecognized expression '$foo'", 17276 "Use of undefined variable").

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::query {

// The largest value an expression may build — a string, an array or a document — in BSON bytes:
// twice the largest document. A value that can never be stored or returned is refused before it
// is built (ExceededMemoryLimit 146), so that no expression's memory grows with what a user
// writes ({$range: [0, 2e9]}, a $reduce that doubles a string) instead of with the data.
inline constexpr size_t kMaxValueBytes = size_t{32} << 20;

// ExceededMemoryLimit (146) naming `op` when a value of `bytes` is over kMaxValueBytes.
Status checkValueBytes(std::string_view op, size_t bytes);

// One value computed by an expression: an owning holder of a single BSON element (stored as the
// one-field document {"": v}), or "missing" (no element: a field that does not exist, $$REMOVE).
// Copies share the buffer (BsonObj), so passing Values around is cheap; a Value never points into
// the input document, so it may outlive it. Thread-safe to read.
class Value {
  public:
    Value() = default;  // missing
    // Copies `e` (any name); an eoo element gives missing.
    static Value fromElement(const bson::BsonElement& e);
    static Value null();
    static Value fromBool(bool b);
    static Value fromInt32(int32_t v);
    static Value fromInt64(int64_t v);
    static Value fromDouble(double v);
    static Value fromDecimal(const bson::Decimal128& v);
    static Value fromString(std::string_view s);
    static Value fromDate(int64_t millis);
    static Value fromDocument(bson::BsonView doc);
    // `arr` is a document with keys "0".."n-1" (BsonArrayBuilder::arr()).
    static Value fromArray(bson::BsonView arr);
    static Value fromArray(const std::vector<Value>& values);
    // Takes a document {"": v} built by the caller (the single element is the value).
    static Value fromHolder(bson::BsonObj holder) { return Value(std::move(holder)); }

    bool missing() const { return _holder.isEmpty(); }
    // The element (named ""); eoo() when missing.
    bson::BsonElement element() const { return _holder.firstElement(); }
    bson::BsonType type() const { return missing() ? bson::BsonType::EOO : element().type(); }
    // Null, undefined or missing: most operators return null for these.
    bool nullish() const;
    bool isNumber() const { return element().isNumber(); }
    bool isArray() const { return type() == bson::BsonType::Array; }
    bool isObject() const { return type() == bson::BsonType::Object; }
    bool isString() const { return type() == bson::BsonType::String; }
    // MongoDB truthiness (false, 0, null, undefined, missing are false).
    bool truthy() const { return !missing() && element().trueValue(); }
    // The array / document value (precondition: isArray() / isObject()).
    bson::BsonView arrayView() const { return element().objValue(); }
    bson::BsonView objectView() const { return element().objValue(); }
    // The elements of an array value as Values.
    std::vector<Value> arrayValues() const;

    // Appends the value under `name`; a missing value appends nothing.
    void appendTo(bson::BsonBuilder& b, std::string_view name) const;
    // Appends to an array; a missing value appends null (as MongoDB does inside arrays).
    void appendTo(bson::BsonArrayBuilder& b) const;
    const bson::BsonObj& holder() const { return _holder; }

    // "missing" or the relaxed-JSON value, for messages and tests.
    std::string toString() const;

  private:
    explicit Value(bson::BsonObj holder) : _holder(std::move(holder)) {}
    bson::BsonObj _holder;
};

// BSON comparison of two values (missing sorts below everything, as MongoDB's Value::compare).
int compareValues(const Value& a, const Value& b);

// Variables visible to an evaluation: the system variables $$NOW / $$CLUSTER_TIME, user variables
// from a command's `let`, and the ones $let/$map/$filter/$reduce bind (child scopes chained to a
// parent with the Variables(const Variables*) constructor; the parent must outlive the child).
// $$ROOT is the `root` argument of evaluate(); $$CURRENT is $$ROOT unless rebound with
// setCurrent(); $$REMOVE is missing.
class Variables {
  public:
    // $$NOW is the current time (milliseconds) at construction.
    Variables();
    explicit Variables(const Variables* parent);

    void set(std::string name, Value v);
    // The value of a user variable (walking parent scopes), or nullptr.
    const Value* get(std::string_view name) const;

    int64_t nowMillis() const;
    void setNowMillis(int64_t millis);
    // $$CLUSTER_TIME (a BSON Timestamp); defaults to NOW's seconds with increment 1.
    uint64_t clusterTime() const;
    void setClusterTime(uint64_t ts);

    // Rebinds $$CURRENT (for stages like $replaceRoot; nullptr restores "CURRENT is ROOT").
    void setCurrent(const Value* current) { _current = current; }
    const Value* current() const;

    // The names of all user variables in scope (for ExpressionParseContext).
    std::vector<std::string> names() const;

    // Parses a command's `let` document ({x: <expr>, ...}) and evaluates each value once, against
    // an empty $$ROOT, in order (later entries may use earlier ones and $$NOW). Names must be
    // valid user variable names (lowercase first letter, no dots): FailedToParse (9) otherwise.
    // The result's parent is `base` (may be null; it must outlive the result).
    static StatusWith<std::unique_ptr<Variables>> fromLet(bson::BsonView let,
                                                          const Variables* base = nullptr);

  private:
    const Variables* _parent = nullptr;
    std::vector<std::pair<std::string, Value>> _vars;
    int64_t _now = 0;
    uint64_t _clusterTime = 0;
    bool _hasNow = false;
    const Value* _current = nullptr;
};

// What the parser needs to know: which user variables are defined ($let/$map bind more in child
// contexts), and options.
class ExpressionParseContext {
  public:
    ExpressionParseContext() = default;
    explicit ExpressionParseContext(const ExpressionParseContext* parent) : _parent(parent) {}

    void define(std::string name) { _names.push_back(std::move(name)); }
    void defineAll(const Variables& vars) {
        for (auto& n : vars.names()) define(std::move(n));
    }
    bool isDefined(std::string_view name) const;

    // When true, references to unknown user variables are accepted at parse time (and evaluate
    // to an error 17276 if still undefined at evaluation). Default false, as MongoDB.
    bool allowUndefinedVariables = false;

  private:
    const ExpressionParseContext* _parent = nullptr;
    std::vector<std::string> _names;
};

// A parsed expression. Immutable after parse; evaluate() may run concurrently.
class Expression {
  public:
    virtual ~Expression() = default;

    // Parses an aggregation expression: a literal, "$field.path", "$$var", {$op: args}, an object
    // of expressions ({a: <expr>, ...}) or an array of expressions. The value is copied where
    // needed: `value` need not outlive the expression.
    static StatusWith<std::unique_ptr<Expression>> parse(bson::BsonElement value,
                                                         const ExpressionParseContext& ctx);
    // Parses `obj` as an object expression (every field value is an expression; `$`-prefixed
    // field names are an error 16410 — use parse() for operator objects).
    static StatusWith<std::unique_ptr<Expression>> parseObject(bson::BsonView obj,
                                                               const ExpressionParseContext& ctx);

    // Evaluates against `root` ($$ROOT and, unless rebound, $$CURRENT).
    virtual StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const = 0;

    // True for literals (and constant-folded subtrees): evaluate() ignores its inputs.
    virtual bool isConstant() const { return false; }
    // For "$a.b" field paths: the path without "$" ("a.b"); empty otherwise.
    virtual std::string fieldPath() const { return {}; }
};

// Evaluates `expr` against `root` and returns whether the result is truthy ($expr's semantics).
StatusWith<bool> evaluateTruthy(const Expression& expr, bson::BsonView root, const Variables& vars);

// A `$group` accumulator: feed it values with process(), read the result with finish().
//   $sum $avg $min $max $first $last $push $addToSet $count $mergeObjects $stdDevPop $stdDevSamp
// process() receives the evaluated argument per document (missing included: $first keeps it as
// null, $push skips it, as MongoDB does). $count takes no argument: call process() once per
// document with any value.
//
// Sharded merging: partial() returns a mergeable partial state and mergePartial() folds one in
// (for $avg/$stdDev* the partial is a document {sum, count[, m2]}; for others the same shape as
// finish()). A router merges shard partials with mergePartial() and calls finish().
class Accumulator {
  public:
    virtual ~Accumulator() = default;
    // `op` is the accumulator name with "$" ("$sum"). Unknown: 15952 "unknown group operator".
    static StatusWith<std::unique_ptr<Accumulator>> make(std::string_view op);
    static bool isAccumulator(std::string_view op);

    virtual Status process(const Value& v) = 0;
    virtual Value finish() const = 0;
    virtual Value partial() const { return finish(); }
    virtual Status mergePartial(const Value& partial) = 0;
    // Approximate memory held (for the $group memory limit).
    virtual size_t memoryUsage() const { return sizeof(*this); }
};

}  // namespace tessera::query
