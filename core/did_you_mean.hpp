#pragma once
// "Did you mean ...?" for mistyped names (flags, presets, tiers): the candidate closest to
// what was typed by edit distance (case-insensitive), when it is close enough to be the likely
// intent — at most 2 edits, and fewer than half the typed name's letters.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlpo {

// Levenshtein distance between `a` and `b`, letters compared case-insensitively.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest of `candidates` to `typed`, or nullopt when none is close enough.
std::optional<std::string> closest_match(std::string_view typed, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for the closest match, or "" when there is none.
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace mlpo
