#pragma once
// RunReport: a run log (mlpo-run --log) drawn as one standalone SVG, readable at a glance —
// `mlpo-run report RUN.jsonl --out report.svg` (or .html, the SVG wrapped in a page). Panels,
// all over the same step axis:
//   loss          train loss per step, and validation loss (eval_loss) where the log has it
//   throughput    tokens/s per step
//   step time     seconds per step as stacked bars: forward, backward, update, weights to
//                 device, checkpoint, and the rest of step_s ("other")
//   tier traffic  bytes read and written per step, per file tier (one stacked bar per step)
//   tier rate     bytes/s per file tier while it was busy: (read + written bytes) / busy_s
// Byte axes are decimal (kB, MB or GB, whichever keeps the largest value >= 1), like every
// GB/s in MLPO.
// Panels without data in the log (no loss in an update-only log, no file tiers) say so in
// one line instead of drawing empty axes. The title is the caller's (model, plan); a second
// line summarises the log (steps, mean tokens/s, tiers). Every series is a
// <polyline class="series" data-series="NAME"> or a <g class="bars" data-series="NAME">, so
// tests and scripts can find them.

#include <string>
#include <vector>

#include "core/step_record.hpp"

namespace mlpo::runlog {

std::string run_report_svg(const std::vector<StepRecord>& steps, const std::string& title);

// Reads `log_path` (core/run_log_reader: a step logged twice keeps its last record) and
// writes the report to `out_path` atomically: SVG, or HTML around it when out_path ends in
// .html. An empty title becomes the log's file name.
// mlpo::Error naming the log line, or --out for another extension, on bad input.
void write_run_report(const std::string& log_path, const std::string& out_path, const std::string& title);

}  // namespace mlpo::runlog
