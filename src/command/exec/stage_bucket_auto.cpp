// $bucketAuto and its granularity series.

#include <algorithm>
#include <cmath>

#include "bson/compare.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/stage_extra.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

int compareValues(const AggValue& a, const AggValue& b) {
    return bson::compareElementValues(a.element(), b.element());
}

AggValue doubleValue(double d) {
    bson::BsonBuilder b;
    b.appendDouble("", d);
    return AggValue{b.obj()};
}

AggValue integralValue(int64_t v, BsonType inputType) {
    bson::BsonBuilder b;
    if (inputType == BsonType::Int32 && v <= INT32_MAX) {
        b.appendInt32("", static_cast<int32_t>(v));
    } else {
        b.appendInt64("", v);
    }
    return AggValue{b.obj()};
}

// s * 10^k computed so that series values come out as their shortest decimal (1.6 * 10 = 16).
double scale(double s, int k) { return k >= 0 ? s * std::pow(10.0, k) : s / std::pow(10.0, -k); }

// x / 10^k, the inverse of scale().
double unscale(double x, int k) { return k >= 0 ? x / std::pow(10.0, k) : x * std::pow(10.0, -k); }

// x = m * 10^k with m in [1, 10).
double mantissa(double x, int* k) {
    *k = static_cast<int>(std::floor(std::log10(x)));
    double m = unscale(x, *k);
    if (m < 1.0) m = unscale(x, --*k);
    if (m >= 10.0) m = unscale(x, ++*k);
    return m;
}

}  // namespace

StatusWith<std::shared_ptr<const GranularityRounder>> GranularityRounder::make(
    std::string_view name) {
    static const std::vector<std::pair<std::string_view, std::vector<double>>> kSeries = {
        {"R5", {1.0, 1.6, 2.5, 4.0, 6.3}},
        {"R10", {1.0, 1.25, 1.6, 2.0, 2.5, 3.15, 4.0, 5.0, 6.3, 8.0}},
        {"R20", {1.0,  1.12, 1.25, 1.4, 1.6, 1.8, 2.0, 2.24, 2.5, 2.8,
                 3.15, 3.55, 4.0,  4.5, 5.0, 5.6, 6.3, 7.1,  8.0, 9.0}},
        {"R40", {1.0,  1.06, 1.12, 1.18, 1.25, 1.32, 1.4,  1.5,  1.6,  1.7,  1.8, 1.9,  2.0, 2.12,
                 2.24, 2.36, 2.5,  2.65, 2.8,  3.0,  3.15, 3.35, 3.55, 3.75, 4.0, 4.25, 4.5, 4.75,
                 5.0,  5.3,  5.6,  6.0,  6.3,  6.7,  7.1,  7.5,  8.0,  8.5,  9.0, 9.5}},
        {"1-2-5", {1.0, 2.0, 5.0}},
        {"E6", {1.0, 1.5, 2.2, 3.3, 4.7, 6.8}},
        {"E12", {1.0, 1.2, 1.5, 1.8, 2.2, 2.7, 3.3, 3.9, 4.7, 5.6, 6.8, 8.2}},
        {"E24", {1.0, 1.1, 1.2, 1.3, 1.5, 1.6, 1.8, 2.0, 2.2, 2.4, 2.7, 3.0,
                 3.3, 3.6, 3.9, 4.3, 4.7, 5.1, 5.6, 6.2, 6.8, 7.5, 8.2, 9.1}},
        {"E48", {1.00, 1.05, 1.10, 1.15, 1.21, 1.27, 1.33, 1.40, 1.47, 1.54, 1.62, 1.69,
                 1.78, 1.87, 1.96, 2.05, 2.15, 2.26, 2.37, 2.49, 2.61, 2.74, 2.87, 3.01,
                 3.16, 3.32, 3.48, 3.65, 3.83, 4.02, 4.22, 4.42, 4.64, 4.87, 5.11, 5.36,
                 5.62, 5.90, 6.19, 6.49, 6.81, 7.15, 7.50, 7.87, 8.25, 8.66, 9.09, 9.53}},
    };
    if (name == "POWERSOF2") {
        return std::shared_ptr<const GranularityRounder>(
            new GranularityRounder(std::string(name), {}));
    }
    for (const auto& [n, series] : kSeries) {
        if (n == name) {
            return std::shared_ptr<const GranularityRounder>(
                new GranularityRounder(std::string(name), series));
        }
    }
    if (name == "R80" || name == "E96" || name == "E192") {
        return Status(ErrorCodes::NotImplemented,
                      "$bucketAuto granularity " + std::string(name) + " is not supported yet");
    }
    return Status(40257, "Rounding granularity not recognized: " + std::string(name));
}

AggValue GranularityRounder::roundUp(const bson::BsonElement& v) const {
    double x = v.numberDouble();
    if (x == 0) return AggValue::of(v);
    if (_series.empty()) {
        int e = 0;
        double f = std::frexp(x, &e);  // x = f * 2^e, f in [0.5, 1)
        (void)f;
        double up = std::ldexp(1.0, e);  // strictly greater than x in both cases
        if ((v.type() == BsonType::Int32 || v.type() == BsonType::Int64) && up <= 9.2e18) {
            return integralValue(static_cast<int64_t>(up), v.type());
        }
        return doubleValue(up);
    }
    int k = 0;
    double m = mantissa(x, &k);
    for (double s : _series) {
        if (s > m) return doubleValue(scale(s, k));
    }
    return doubleValue(scale(_series.front(), k + 1));
}

AggValue GranularityRounder::roundDown(const bson::BsonElement& v) const {
    double x = v.numberDouble();
    if (x == 0) return AggValue::of(v);
    if (_series.empty()) {
        int e = 0;
        double f = std::frexp(x, &e);
        double down = f == 0.5 ? std::ldexp(1.0, e - 2) : std::ldexp(1.0, e - 1);
        if ((v.type() == BsonType::Int32 || v.type() == BsonType::Int64) && down >= 1.0) {
            return integralValue(static_cast<int64_t>(down), v.type());
        }
        return doubleValue(down);
    }
    int k = 0;
    double m = mantissa(x, &k);
    for (auto it = _series.rbegin(); it != _series.rend(); ++it) {
        if (*it < m) return doubleValue(scale(*it, k));
    }
    return doubleValue(scale(_series.back(), k - 1));
}

StatusWith<std::unique_ptr<BucketAutoStage>> BucketAutoStage::parse(const bson::BsonElement& spec) {
    if (spec.type() != BsonType::Object) {
        return Status(40240, "The argument to $bucketAuto must be an object, but found type: " +
                                 std::string(bson::typeName(spec.type())));
    }
    std::unique_ptr<BucketAutoStage> stage(new BucketAutoStage());
    stage->_spec = spec.objValue().copy();
    bool haveBuckets = false;
    for (auto f : stage->_spec) {
        std::string_view n = f.fieldName();
        if (n == "groupBy") {
            bool ok = (f.type() == BsonType::Object && !f.objValue().isEmpty() &&
                       f.objValue().firstElement().fieldName().starts_with("$")) ||
                      (f.type() == BsonType::String && f.stringValue().size() >= 2 &&
                       f.stringValue()[0] == '$');
            if (!ok) {
                return Status(40239,
                              "The $bucketAuto 'groupBy' field must be defined as a $-prefixed "
                              "path or an expression object, but found: " +
                                  f.toString(false));
            }
            ASSIGN_OR_RETURN(stage->_groupBy, StageExpression::parse(f));
        } else if (n == "buckets") {
            if (!f.isNumber()) {
                return Status(40241,
                              "The $bucketAuto 'buckets' field must be a numeric value, but "
                              "found type: " +
                                  std::string(bson::typeName(f.type())));
            }
            double d = f.numberDouble();
            if (!f.isIntegral() || d < INT32_MIN || d > INT32_MAX) {
                return Status(40242,
                              "The $bucketAuto 'buckets' field must be representable as a "
                              "32-bit integer, but found " +
                                  f.toString(false));
            }
            stage->_nBuckets = static_cast<int32_t>(f.numberLong());
            haveBuckets = true;
        } else if (n == "output") {
            if (f.type() != BsonType::Object) {
                return Status(40244,
                              "The $bucketAuto 'output' field must be an object, but found "
                              "type: " +
                                  std::string(bson::typeName(f.type())));
            }
            for (auto o : f.objValue()) {
                ASSIGN_OR_RETURN(AccumulatorSpec a, parseAccumulatorField(o));
                stage->_accs.push_back(std::move(a));
            }
        } else if (n == "granularity") {
            if (f.type() != BsonType::String) {
                return Status(40261,
                              "The $bucketAuto 'granularity' field must be a string, but found "
                              "type: " +
                                  std::string(bson::typeName(f.type())));
            }
            ASSIGN_OR_RETURN(stage->_rounder, GranularityRounder::make(f.stringValue()));
        } else {
            return Status(40245, "Unrecognized option to $bucketAuto: " + std::string(n));
        }
    }
    if (!stage->_groupBy || !haveBuckets) {
        return Status(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified");
    }
    if (stage->_nBuckets <= 0) {
        return Status(40243, "The $bucketAuto 'buckets' field must be greater than 0, but found: " +
                                 std::to_string(stage->_nBuckets));
    }
    if (stage->_accs.empty()) {
        static const bson::BsonObj kCount = bson::fromJson(R"({"count": {"$sum": 1}})");
        ASSIGN_OR_RETURN(AccumulatorSpec a, parseAccumulatorField(kCount.firstElement()));
        stage->_accs.push_back(std::move(a));
    }
    return stage;
}

Status BucketAutoStage::load(ExecContext& ctx) {
    size_t bytes = 0;
    WorkingMember m;
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, &m));
        if (!more) break;
        TRY_STATUS(ctx.checkForInterrupt());
        ASSIGN_OR_RETURN(AggValue key, _groupBy->evaluate(m.doc));
        if (key.missing()) key = AggValue::null();
        if (_rounder) {
            bson::BsonElement k = key.element();
            if (!k.isNumber()) {
                return Status(40258,
                              "$bucketAuto can specify a 'granularity' with numeric boundaries "
                              "only, but found a value with type: " +
                                  std::string(bson::typeName(k.type())));
            }
            double d = k.numberDouble();
            if (std::isnan(d)) {
                return Status(40259,
                              "$bucketAuto can specify a 'granularity' with numeric boundaries "
                              "only, but found a NaN");
            }
            if (d < 0) {
                return Status(40260,
                              "$bucketAuto can specify a 'granularity' with non-negative numbers "
                              "only, but found a negative number");
            }
        }
        bytes += m.doc.size() + key.holder.size() + sizeof(Entry);
        if (bytes > kMaxBlockingMemoryBytes) {
            return Status(ErrorCodes::QueryExceededMemoryLimitNoDiskUseAllowed,
                          "Exceeded memory limit for $bucketAuto, but didn't allow external sort. "
                          "Pass allowDiskUse:true to opt in.");
        }
        _input.push_back(Entry{std::move(key), m.doc});
    }
    // Stable: equal keys keep their input order ($first / $last / $push see that order).
    std::stable_sort(_input.begin(), _input.end(), [](const Entry& a, const Entry& b) {
        return compareValues(a.key, b.key) < 0;
    });
    return makeBuckets();
}

Status BucketAutoStage::makeBuckets() {
    const size_t n = _input.size();
    if (n == 0) return Status::OK();
    int64_t approx = std::llround(static_cast<double>(n) / static_cast<double>(_nBuckets));
    if (approx < 1) approx = 1;
    size_t idx = 0;
    std::optional<AggValue> previousMax;
    for (int32_t bucketNum = 1; bucketNum <= _nBuckets && idx < n; ++bucketNum) {
        const bool isLast = bucketNum == _nBuckets;
        AggValue min = _input[idx].key;
        if (_rounder) min = previousMax ? *previousMax : _rounder->roundDown(min.element());
        AggValue max;
        std::vector<std::unique_ptr<query::Accumulator>> accs;
        for (const AccumulatorSpec& spec : _accs) {
            ASSIGN_OR_RETURN(auto acc, query::Accumulator::make(spec.op));
            accs.push_back(std::move(acc));
        }
        auto add = [&](const Entry& e) -> Status {
            max = e.key;
            for (size_t k = 0; k < _accs.size(); ++k) {
                query::Value v;
                if (_accs[k].arg) {
                    ASSIGN_OR_RETURN(AggValue av, _accs[k].arg->evaluate(e.doc));
                    v = av.toValue();
                }
                TRY_STATUS(accs[k]->process(v));
            }
            return Status::OK();
        };
        TRY_STATUS(add(_input[idx++]));
        for (int64_t i = 1; idx < n && (i < approx || isLast); ++i) TRY_STATUS(add(_input[idx++]));
        if (_rounder) {
            AggValue boundary = _rounder->roundUp(max.element());
            while (idx < n && (compareValues(boundary, _input[idx].key) > 0 ||
                               compareValues(max, _input[idx].key) == 0)) {
                TRY_STATUS(add(_input[idx++]));
            }
            if (boundary.element().numberDouble() == 0.0 && idx < n) {
                max = _rounder->roundDown(_input[idx].key.element());
            } else {
                max = boundary;
            }
        } else {
            while (idx < n && compareValues(max, _input[idx].key) == 0) {
                TRY_STATUS(add(_input[idx++]));
            }
            if (idx < n) max = _input[idx].key;
        }
        previousMax = max;
        bson::BsonBuilder b;
        b.startObject("_id")
            .appendElementAs(min.element(), "min")
            .appendElementAs(max.element(), "max")
            .end();
        for (size_t k = 0; k < _accs.size(); ++k) {
            query::Value v = accs[k]->finish();
            if (v.missing()) v = query::Value::null();
            v.appendTo(b, _accs[k].field);
        }
        _output.push_back(b.obj());
    }
    _input.clear();
    return Status::OK();
}

StatusWith<bool> BucketAutoStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (!_loaded) {
        TRY_STATUS(load(ctx));
        _loaded = true;
    }
    if (_pos >= _output.size()) return false;
    *out = WorkingMember();
    out->doc = std::move(_output[_pos++]);
    out->hasDoc = true;
    return true;
}

void BucketAutoStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("$bucketAuto", _spec);
}

namespace {
StatusWith<std::unique_ptr<PlanStage>> parseBucketAuto(const StageParseContext& ctx,
                                                       std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(auto stage, BucketAutoStage::parse(ctx.spec()));
    return stack(std::move(input), std::move(stage));
}
}  // namespace

namespace stages {
const StageDescriptor kBucketAuto{"$bucketAuto", {}, &parseBucketAuto};
}  // namespace stages

}  // namespace tessera::command::exec
