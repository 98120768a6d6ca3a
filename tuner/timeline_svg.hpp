#pragma once
// TimelineSvg: a Gantt chart of one simulated iteration as a standalone SVG — one lane per
// rank (forward, backward, Adam, stalls) and per tier (reads, writes, slot waits), each kind
// in its own row of the lane, a time axis and a legend. Bars closer than a pixel merge (so
// large runs stay small files); a merged bar's opacity shows how much of it is busy.

#include <string>
#include <vector>

#include "simulator/iteration_model.hpp"

namespace mlpo::tune {

std::string timeline_svg(const std::vector<sim::TimelineEvent>& events, const std::string& title);

// Writes the SVG to `path` (atomically); mlpo::Error naming the path on failure.
void write_timeline_svg(const std::vector<sim::TimelineEvent>& events, const std::string& title,
                        const std::string& path);

}  // namespace mlpo::tune
