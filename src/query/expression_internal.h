#pragma once

// Internals shared by the expression_*.cpp files: the operator registry and value helpers.
// Not part of the public API (include query/expression.h).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "query/expression.h"

namespace tessera::query::expr {

using ExprPtr = std::unique_ptr<Expression>;

// Operators whose arguments are all evaluated first: `{$op: [a, b]}` or `{$op: a}`.
using PositionalFn =
    std::function<StatusWith<Value>(const std::vector<Value>& args, const Variables& vars)>;

// Operators taking an object of named arguments ({$regexMatch: {input, regex, options}}).
class NamedValues {
  public:
    void add(std::string name, Value v) { _values.emplace_back(std::move(name), std::move(v)); }
    // Missing when absent.
    Value get(std::string_view name) const;
    bool has(std::string_view name) const;

  private:
    std::vector<std::pair<std::string, Value>> _values;
};
using NamedFn = std::function<StatusWith<Value>(const NamedValues& args, const Variables& vars)>;

// Operators with their own parser ($let, $map, $cond, ...).
using CustomParseFn = std::function<StatusWith<ExprPtr>(const bson::BsonElement& args,
                                                        const ExpressionParseContext&)>;

struct OpInfo {
    enum class Kind { kPositional, kNamed, kCustom } kind = Kind::kPositional;
    std::string name;  // "$concat"
    int minArgs = 0;
    int maxArgs = -1;  // -1: unbounded
    PositionalFn positional;
    std::vector<std::string> allowed;   // kNamed
    std::vector<std::string> required;  // kNamed
    int unknownArgCode = 9;             // kNamed: error for an unknown field
    int missingArgCode = 9;             // kNamed: error for a missing required field
    bool requireObject = true;          // kNamed: the argument must be an object
    NamedFn named;
    CustomParseFn custom;
};

class Registry {
  public:
    static const Registry& get();
    const OpInfo* find(std::string_view name) const;

    void positional(std::string name, int minArgs, int maxArgs, PositionalFn fn);
    void named(std::string name, std::vector<std::string> allowed,
               std::vector<std::string> required, NamedFn fn, int unknownCode = 9,
               int missingCode = 9);
    void custom(std::string name, CustomParseFn fn);

  private:
    std::map<std::string, OpInfo, std::less<>> _ops;
};

// Registration functions, one per file (called once by Registry::get()).
void registerArithmetic(Registry& r);
void registerLogic(Registry& r);  // comparison, boolean, conditional, $let/$map/...
void registerString(Registry& r);
void registerArray(Registry& r);  // array and set operators
void registerDate(Registry& r);
void registerConversion(Registry& r);  // $type $convert $to* $isNumber
void registerObject(Registry& r);      // $mergeObjects $getField $setField

// Parses the operand of an operator into a list of argument expressions (an array gives one per
// element, anything else one).
StatusWith<std::vector<ExprPtr>> parseArgs(const bson::BsonElement& args,
                                           const ExpressionParseContext& ctx);
// Checks the arity of a positional operator (16020 / 28667 / 16021 messages).
Status checkArity(std::string_view op, size_t n, int minArgs, int maxArgs);

// Validates a user variable name (for $let, $map's "as", `let`).
Status validateVariableName(std::string_view name);

// Expression nodes reusable by operator files.
class ConstantExpression final : public Expression {
  public:
    explicit ConstantExpression(Value v) : _v(std::move(v)) {}
    StatusWith<Value> evaluate(bson::BsonView, const Variables&) const override { return _v; }
    bool isConstant() const override { return true; }

  private:
    Value _v;
};

// ---- value helpers ----
std::string typeNameOf(const Value& v);  // "missing" for missing, else bson type name

// Numeric helpers. rank: int32=0, int64=1, double=2, decimal=3.
int numericRank(bson::BsonType t);
bson::Decimal128 toDecimal(const bson::BsonElement& e);
double toDouble(const bson::BsonElement& e);
// A decimal computed through long double (Tessera has no exact decimal arithmetic yet).
Value decimalFromLongDouble(long double v);
long double decimalToLongDouble(const bson::Decimal128& d);
// An int64 result that fits int32 when `preferInt` (e.g. int+int stays int).
Value integerResult(int64_t v, bool preferInt);

// Whether a Value holds an integral number representable as int64 (for index arguments), and it.
bool integralValue(const Value& v, int64_t* out);

// Date helpers (UTC, proleptic Gregorian).
struct CivilTime {
    int64_t year;
    int month;  // 1..12
    int day;    // 1..31
    int hour, minute, second, millis;
    int dayOfWeek;  // 1 (Sunday) .. 7
    int dayOfYear;  // 1..366
};
CivilTime toCivil(int64_t millis);
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d);
int64_t fromCivil(int64_t y, int month, int day, int hour, int minute, int second, int millis);
// Date-ish values: Date, Timestamp, ObjectId -> millis; false otherwise.
bool dateMillis(const Value& v, int64_t* out);

// Sums numbers with MongoDB's type promotion (int -> long -> double -> decimal; int/long
// overflow moves to the next type).
class NumericSum {
  public:
    void add(const bson::BsonElement& e);
    Value result() const;
    int rank() const { return _rank; }
    double asDouble() const { return _rank == 3 ? static_cast<double>(_dec) : _dbl; }
    long double asLongDouble() const { return _rank == 3 ? _dec : static_cast<long double>(_dbl); }

  private:
    int _rank = 0;
    int64_t _long = 0;
    bool _overflow = false;
    double _dbl = 0;
    long double _dec = 0;
};

// String conversions (expression_convert.cpp): shortest round-trip double formatting, the
// $toString rendering of a value, and the coercion $substr/$toLower/... apply (nullish -> "",
// numbers, dates, strings; others fail with 16007).
std::string formatDouble(double d);
std::string formatDate(int64_t millis, std::string_view format);  // MongoDB's %Y %m ... specifiers
StatusWith<std::string> coerceToString(const Value& v);

// Builds an array Value from element Values.
Value makeArray(const std::vector<Value>& values);

// Navigates an aggregation field path (dotted parts) from a value, mapping over arrays.
Value navigatePath(const Value& base, const std::vector<std::string>& parts, size_t from = 0);
Value navigatePath(bson::BsonView doc, const std::vector<std::string>& parts);

}  // namespace tessera::query::expr
