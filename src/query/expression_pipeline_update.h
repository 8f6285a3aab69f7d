#pragma once

// Pipeline-style updates: `u` given as an array of aggregation stages. MongoDB allows exactly
// $addFields/$set, $project, $unset and $replaceRoot/$replaceWith there.

#include <memory>
#include <string>
#include <vector>

#include "query/expression.h"

namespace tessera::query {

class UpdatePipeline {
  public:
    // `pipeline` is a BSON array of stage documents. `let` (may be null) holds the command's
    // `let` variables ($$NOW is taken from it, else fixed at parse time). Errors: 40323 (a stage
    // with != 1 field), 40324 (unknown stage), InvalidOptions 72 (a stage not allowed in an
    // update), 31253/31254 ($project mixing inclusion/exclusion), expression parse errors.
    static StatusWith<std::shared_ptr<const UpdatePipeline>> parse(
        bson::BsonView pipeline, std::shared_ptr<const Variables> let);

    // Runs the stages over `doc` ($$ROOT is each stage's input). The result keeps `doc`'s `_id`
    // (added back first when a stage dropped it); a changed `_id` is ImmutableField (66) —
    // checked by the caller (UpdateDriver). Non-object $replaceRoot results: 40228.
    Status apply(bson::BsonView doc, bson::BsonObj* out) const;

    struct Stage;
    ~UpdatePipeline();

  private:
    UpdatePipeline() = default;
    std::vector<std::unique_ptr<Stage>> _stages;
    std::shared_ptr<const Variables> _vars;
};

}  // namespace tessera::query
