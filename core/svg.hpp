#pragma once
// Small pieces every SVG chart of MLPO shares (the tuner's iteration timeline, the run
// report): escaping text for XML, round axis ticks, and compact tick labels. Charts write
// their elements with snprintf into a std::string; there is no drawing library.

#include <string>
#include <vector>

namespace mlpo::svg {

// `text` with & < > " replaced by their XML entities.
std::string escape(const std::string& text);

// Round values (steps of 1, 2 or 5 x 10^k) from at or below `lo` to at or above `hi`, about
// `target` intervals; at least two values. lo == hi widens the range around it.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

// A tick label of at most ~4 significant digits with an SI suffix above 1000:
// 0.0021, 0.5, 12, 4.5k, 1.2M, 3G.
std::string compact_number(double value);

}  // namespace mlpo::svg
