#pragma once
// The --help text of mlpo-run: what it does and its modes, in a few lines; the flags follow in
// groups (cli/mlpo_run.cpp declares them) and the details are in docs/training.md.

namespace mlpo::cli {

inline constexpr const char* kRunHelp =
    "mlpo-run: pre-train a LLaMA-style model with its optimizer state offloaded under a plan from\n"
    "mlpo-tune: forward and backward on --backend cpu or cuda, then AdamW streaming (p, m, v) from\n"
    "every storage tier of the plan.\n\n"
    "  mlpo-run --model M --data tokens.bin [--plan plan.json] [--steps N] [--checkpoint-dir DIR] ...\n"
    "  mlpo-run prepare-data --input FILE|DIR... --out tokens.bin [--tokenizer tokenizer.model]\n"
    "  mlpo-run report run.jsonl --out report.svg|report.html [--title TEXT]\n"
    "  mlpo-run --update-only --params N --plan plan.json [--ranks R] [--state-hash]\n"
    "  mpirun -np R mlpo-run --model ...        ZeRO-3 data parallelism over R ranks\n\n"
    "Ctrl-C (or SIGTERM) finishes the step in progress and stops, naming the checkpoint to resume\n"
    "from; a second Ctrl-C stops at once (the last checkpoint stays loadable). Bad input exits 2\n"
    "with one line naming the fix, before anything is written. Details: docs/training.md (data,\n"
    "schedule, checkpoints and --resume, ZeRO-3, --update-only), docs/cuda.md, docs/formats.md.";

// The flag groups of mlpo-run's --help, in the order they are shown.
inline constexpr const char* kGroupModel = "Model and data";
inline constexpr const char* kGroupSchedule = "Schedule and optimizer";
inline constexpr const char* kGroupCheckpoint = "Checkpoints";
inline constexpr const char* kGroupExport = "Export";
inline constexpr const char* kGroupPlan = "Plan and resources";
inline constexpr const char* kGroupOutput = "Output";
inline constexpr const char* kGroupUpdateOnly = "Update-only (--update-only)";

}  // namespace mlpo::cli
