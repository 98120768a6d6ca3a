#pragma once
// The checkpoint directory DIR as a whole (docs/training.md, "Checkpoints"): which complete
// checkpoints it holds, the `latest` pointer, the guard against starting a new run in another
// run's directory, the clean-up after a new checkpoint, and the free-space check before a run.
//
// Names: DIR/ckpt-<step>/ is a complete checkpoint (write_checkpoint renames its
// DIR/ckpt-<step>.tmp/ only once every file, the manifest last, is durable); DIR/latest names
// the newest one published. A crash never leaves `latest` missing once a checkpoint exists,
// but a user or a copy tool can, so nothing here trusts `latest` alone: the guard and the
// clean-up look at the ckpt-* names themselves.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlpo::checkpoint {

// "ckpt-<step>".
std::string checkpoint_name(std::int64_t step);

// The step of a complete checkpoint's name "ckpt-<step>"; none for anything else (a ".tmp").
std::optional<std::int64_t> checkpoint_step(const std::string& name);

// Steps of the complete checkpoints DIR holds, newest first; empty when DIR does not exist.
std::vector<std::int64_t> complete_checkpoints(const std::filesystem::path& dir);
// DIR/ckpt-<step> of the newest complete checkpoint; none when DIR holds none.
std::optional<std::filesystem::path> newest_checkpoint(const std::filesystem::path& dir);

// The name `DIR/latest` holds ("ckpt-<step>"); none when there is no `latest`. Throws
// mlpo::Error naming the file when it is unreadable or names no checkpoint.
std::optional<std::string> read_latest(const std::filesystem::path& dir);

// For a run that does not resume: throws mlpo::Error (naming what DIR holds and the fix:
// --resume or another directory) when DIR holds `latest` or any ckpt-* entry, complete or not.
void expect_no_checkpoints(const std::filesystem::path& dir);

// Before a checkpoint is written: removes every unfinished ckpt-*.tmp (of a crashed or failed
// write) and ckpt-*.removing (of a crashed removal), so their space is free for the new one.
void remove_unfinished_checkpoints(const std::filesystem::path& dir);

// Removes a complete checkpoint directory without ever leaving a half-removed one under its
// complete name: renamed to ckpt-<step>.removing first, then removed.
void discard_checkpoint(const std::filesystem::path& checkpoint);

// After ckpt-<step> is published: removes the checkpoints older than it and the temp files of
// a killed `latest` update. Never one newer than `step` (a run resumed from an older
// checkpoint must not destroy a later complete one).
void remove_superseded_checkpoints(const std::filesystem::path& dir, std::int64_t step);

// Bytes a checkpoint of `params` parameters in `tensors` tensors takes: bf16 weights with their
// safetensors header, fp32 p, m, v, and the manifest.
std::uint64_t checkpoint_bytes(std::int64_t params, std::int64_t tensors, int ranks);

// Throws mlpo::Error when the file system of DIR (or of its nearest existing parent) has less
// free space than one checkpoint of `bytes` needs — new checkpoints are written beside the
// previous one — naming both numbers and the fix. Space held by unfinished ckpt-*.tmp and
// ckpt-*.removing directories counts as free (remove_unfinished_checkpoints frees it before each write).
void check_checkpoint_space(const std::filesystem::path& dir, std::uint64_t bytes);

}  // namespace mlpo::checkpoint
