// $group accumulators.
#include <cmath>

#include "query/expression_internal.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonType;
using namespace expr;

namespace {

class SumAcc final : public Accumulator {
  public:
    explicit SumAcc(bool count) : _count(count) {}
    Status process(const Value& v) override {
        if (_count) {
            _sum.add(Value::fromInt32(1).element());
        } else if (v.isNumber()) {
            _sum.add(v.element());
        }
        return Status::OK();
    }
    Value finish() const override { return _sum.result(); }
    Status mergePartial(const Value& p) override {
        if (p.isNumber()) _sum.add(p.element());
        return Status::OK();
    }

  private:
    bool _count;
    NumericSum _sum;
};

class AvgAcc final : public Accumulator {
  public:
    Status process(const Value& v) override {
        if (v.isNumber()) {
            _sum.add(v.element());
            ++_n;
        }
        return Status::OK();
    }
    Value finish() const override {
        if (_n == 0) return Value::null();
        if (_sum.rank() == 3) return decimalFromLongDouble(_sum.asLongDouble() / _n);
        return Value::fromDouble(_sum.result().element().numberDouble() / static_cast<double>(_n));
    }
    Value partial() const override {
        bson::BsonBuilder b;
        b.startObject("");
        _sum.result().appendTo(b, "sum");
        b.appendInt64("count", _n);
        b.end();
        return Value::fromHolder(b.obj());
    }
    Status mergePartial(const Value& p) override {
        if (!p.isObject()) return Status(ErrorCodes::TypeMismatch, "bad $avg partial");
        BsonElement s = p.objectView()["sum"];
        if (s.isNumber()) _sum.add(s);
        _n += p.objectView()["count"].numberLong();
        return Status::OK();
    }

  private:
    NumericSum _sum;
    int64_t _n = 0;
};

class MinMaxAcc final : public Accumulator {
  public:
    explicit MinMaxAcc(bool isMax) : _max(isMax) {}
    Status process(const Value& v) override {
        if (v.nullish()) return Status::OK();
        if (_best.missing()) {
            _best = v;
        } else {
            int c = compareValues(v, _best);
            if (_max ? c > 0 : c < 0) _best = v;
        }
        return Status::OK();
    }
    Value finish() const override { return _best.missing() ? Value::null() : _best; }
    Status mergePartial(const Value& p) override { return process(p); }

  private:
    bool _max;
    Value _best;
};

class FirstLastAcc final : public Accumulator {
  public:
    explicit FirstLastAcc(bool first) : _first(first) {}
    Status process(const Value& v) override {
        if (_first && _set) return Status::OK();
        _v = v.missing() ? Value::null() : v;
        _set = true;
        return Status::OK();
    }
    Value finish() const override { return _set ? _v : Value::null(); }
    Status mergePartial(const Value& p) override { return process(p); }

  private:
    bool _first;
    bool _set = false;
    Value _v;
};

class PushAcc final : public Accumulator {
  public:
    explicit PushAcc(bool unique) : _unique(unique) {}
    Status process(const Value& v) override {
        if (v.missing()) return Status::OK();
        if (_unique) {
            for (const auto& x : _items) {
                if (compareValues(x, v) == 0) return Status::OK();
            }
        }
        _bytes += v.holder().size();
        _items.push_back(v);
        return Status::OK();
    }
    Value finish() const override { return makeArray(_items); }
    Status mergePartial(const Value& p) override {
        if (!p.isArray()) return Status(ErrorCodes::TypeMismatch, "bad $push partial");
        for (const auto& v : p.arrayValues()) TRY_STATUS(process(v));
        return Status::OK();
    }
    size_t memoryUsage() const override { return sizeof(*this) + _bytes; }

  private:
    bool _unique;
    std::vector<Value> _items;
    size_t _bytes = 0;
};

class MergeObjectsAcc final : public Accumulator {
  public:
    Status process(const Value& v) override {
        if (v.nullish()) return Status::OK();
        if (!v.isObject()) {
            return Status(40400, "$mergeObjects requires object inputs, but input " + v.toString() +
                                     " is of type " + typeNameOf(v));
        }
        for (BsonElement e : v.objectView()) {
            bool found = false;
            for (auto& [k, val] : _fields) {
                if (k == e.fieldName()) {
                    val = Value::fromElement(e);
                    found = true;
                }
            }
            if (!found) _fields.emplace_back(std::string(e.fieldName()), Value::fromElement(e));
        }
        return Status::OK();
    }
    Value finish() const override {
        bson::BsonBuilder b;
        b.startObject("");
        for (const auto& [k, v] : _fields) v.appendTo(b, k);
        b.end();
        return Value::fromHolder(b.obj());
    }
    Status mergePartial(const Value& p) override { return process(p); }

  private:
    std::vector<std::pair<std::string, Value>> _fields;
};

class StdDevAcc final : public Accumulator {
  public:
    explicit StdDevAcc(bool samp) : _samp(samp) {}
    Status process(const Value& v) override {
        if (!v.isNumber()) return Status::OK();
        double x = toDouble(v.element());
        ++_n;
        double delta = x - _mean;
        _mean += delta / static_cast<double>(_n);
        _m2 += delta * (x - _mean);
        return Status::OK();
    }
    Value finish() const override {
        if (_n == 0 || (_samp && _n == 1)) return Value::null();
        return Value::fromDouble(std::sqrt(_m2 / static_cast<double>(_samp ? _n - 1 : _n)));
    }
    Value partial() const override {
        bson::BsonBuilder b;
        b.startObject("")
            .appendInt64("count", _n)
            .appendDouble("mean", _mean)
            .appendDouble("m2", _m2)
            .end();
        return Value::fromHolder(b.obj());
    }
    Status mergePartial(const Value& p) override {
        if (!p.isObject()) return Status(ErrorCodes::TypeMismatch, "bad $stdDev partial");
        int64_t n = p.objectView()["count"].numberLong();
        if (n == 0) return Status::OK();
        double mean = p.objectView()["mean"].numberDouble();
        double m2 = p.objectView()["m2"].numberDouble();
        // Chan et al. parallel variance.
        int64_t total = _n + n;
        double delta = mean - _mean;
        _m2 += m2 + delta * delta * static_cast<double>(_n) * static_cast<double>(n) /
                        static_cast<double>(total);
        _mean += delta * static_cast<double>(n) / static_cast<double>(total);
        _n = total;
        return Status::OK();
    }

  private:
    bool _samp;
    int64_t _n = 0;
    double _mean = 0, _m2 = 0;
};

}  // namespace

bool Accumulator::isAccumulator(std::string_view op) {
    static const char* kOps[] = {"$sum",   "$avg",          "$min",       "$max",
                                 "$first", "$last",         "$push",      "$addToSet",
                                 "$count", "$mergeObjects", "$stdDevPop", "$stdDevSamp"};
    for (const char* k : kOps) {
        if (op == k) return true;
    }
    return false;
}

StatusWith<std::unique_ptr<Accumulator>> Accumulator::make(std::string_view op) {
    std::unique_ptr<Accumulator> a;
    if (op == "$sum")
        a = std::make_unique<SumAcc>(false);
    else if (op == "$count")
        a = std::make_unique<SumAcc>(true);
    else if (op == "$avg")
        a = std::make_unique<AvgAcc>();
    else if (op == "$min")
        a = std::make_unique<MinMaxAcc>(false);
    else if (op == "$max")
        a = std::make_unique<MinMaxAcc>(true);
    else if (op == "$first")
        a = std::make_unique<FirstLastAcc>(true);
    else if (op == "$last")
        a = std::make_unique<FirstLastAcc>(false);
    else if (op == "$push")
        a = std::make_unique<PushAcc>(false);
    else if (op == "$addToSet")
        a = std::make_unique<PushAcc>(true);
    else if (op == "$mergeObjects")
        a = std::make_unique<MergeObjectsAcc>();
    else if (op == "$stdDevPop")
        a = std::make_unique<StdDevAcc>(false);
    else if (op == "$stdDevSamp")
        a = std::make_unique<StdDevAcc>(true);
    else
        return Status(15952, "unknown group operator '" + std::string(op) + "'");
    return a;
}

}  // namespace tessera::query
