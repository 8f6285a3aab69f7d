#pragma once

#include <optional>
#include <string>

namespace tessera::query {

// Output of a match besides true/false. elemMatchKey is the index (decimal string) of the array
// element that made the document match, as MongoDB records it for the positional `$` operator of
// projections and updates: set by implicit array traversal (the outermost traversed array) and by
// $elemMatch. $or, $nor and $not do not report keys (MongoDB resets them).
struct MatchDetails {
    std::optional<std::string> elemMatchKey;

    void reset() { elemMatchKey.reset(); }
};

}  // namespace tessera::query
