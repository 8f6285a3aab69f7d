#pragma once

// `{$expr: <aggregation expression>}` inside a query filter (the matcher node).

#include <memory>

#include "query/expression.h"
#include "query/match_expression.h"

namespace tessera::query {

// Builds the match node for `{$expr: <expr>}`: it matches a document when the expression is
// truthy; evaluation errors make the document not match (the matcher interface has no error
// path; see the report). `let` (may be null) supplies the command's `let` variables; when null a
// Variables with $$NOW fixed at parse time is used. The node reports MatchType::kAnd with no
// children so planners treat it as "no indexable predicate".
StatusWith<std::unique_ptr<MatchExpression>> makeExprMatchExpression(
    const bson::BsonElement& expr, std::shared_ptr<const Variables> let);

// The parsed expression of a node made by makeExprMatchExpression, else nullptr.
const Expression* exprOfMatchExpression(const MatchExpression* e);

}  // namespace tessera::query
