#pragma once
// Profile ("schema": "mlpo.profile/1"): what `mlpo-profile` measured on one machine — host
// memory and CPU-Adam throughput, GPUs and their links, and every storage tier's read and
// write bandwidth as a curve over concurrent streams. Each measured figure carries how it
// was measured (size, repetitions, median/min/max). The simulator and tuner read it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/io_setting.hpp"
#include "core/json_io.hpp"
#include "core/tier_kind.hpp"

namespace mlpo {

// A measured figure: the median is the value used; min/max show the spread. In JSON it is
// either an object with these fields or a plain number (a value given, not measured:
// repetitions 0).
struct Measurement {
  double median = 0;
  double min = 0;
  double max = 0;
  std::int64_t repetitions = 0;
  std::int64_t size_bytes = 0;  // bytes (or elements) per repetition, 0 if not applicable
};

struct CurvePoint {
  std::int64_t streams = 1;  // concurrent streams (or threads) for this point
  Measurement value;
};

// Linear interpolation over `points` sorted by streams; clamped at both ends.
double interpolate(const std::vector<CurvePoint>& points, double streams);

// What the executor's own forward and backward achieve on one compute backend, per part of
// the model: mlpo-profile's model probe runs the trainer's micro-batch on a three-layer model
// of the given widths (profiles/internal/compute_probe.hpp). Each figure is an effective FLOP/s
// against the simulator's FLOP counts (core/accounting.hpp: layer_forward_flops_per_token,
// head_forward_flops_per_token; backward counts 3x forward), so the simulator predicts the
// executor's time part by part: a layer's forward (GEMMs, attention, norms, RoPE, SwiGLU), its
// backward (the recomputed forward, both backward GEMMs, the gradient hand-over to bf16 host
// memory), and the head's (embedding, final norm, lm_head, cross-entropy; its backward also
// carries the embedding's scatter-add and the last layer's skipped recompute). Optional:
// absent (measured() false) in profiles made before the probe or with it turned off.
struct ModelComputeFigures {
  std::string model;  // the preset or file whose widths were run
  std::int64_t micro_batch = 0;
  std::int64_t seq_len = 0;
  std::int64_t threads = 0;  // the backend's threads (CPU)
  Measurement layer_forward_gflops;
  Measurement layer_backward_gflops;
  Measurement head_forward_gflops;
  Measurement head_backward_gflops;
  bool measured() const { return layer_forward_gflops.median > 0; }
};

struct HostProfile {
  std::int64_t cores = 1;
  std::int64_t memory_bytes = 0;
  std::int64_t available_bytes = 0;
  std::int64_t numa_nodes = 1;
  Measurement memcpy_gbps_single;               // one thread, GB/s of bytes copied
  Measurement memcpy_gbps;                      // all threads
  std::vector<CurvePoint> adam_elements_per_s;  // fused bf16-grad AdamW, by threads
  bool adam_estimated = false;                  // true until the real kernel was measured
  // The update pipeline's AdamW with integrity on (executor/offload/checked_adamw.hpp: per
  // 16 Ki-element chunk verify, AdamW, record), by threads; empty in older profiles (the
  // models then compose adam_elements_per_s with crc32c_gbps).
  std::vector<CurvePoint> adam_checked_elements_per_s;
  Measurement bf16_convert_gbps;  // fp32 -> bf16, GB/s of fp32 read
  Measurement bf16_to_fp32_gbps;  // bf16 -> fp32, GB/s of fp32 written; optional (0 = not measured)
  Measurement cpu_gemm_gflops;    // CPU backend GEMM (for CPU-only training plans)
  // CRC32C of a 256 KiB buffer in cache, one thread, GB/s: the integrity check's cost in the
  // update (each state byte twice per step, in AdamW's pass); optional (0 = not measured).
  Measurement crc32c_gbps;
  // The global gradient norm's pass over a rank's bf16 gradient shard after backward (sums of
  // squares per chunk, executor/offload/gradient_norm.hpp) on every core, elements/s;
  // optional (0 = not measured).
  Measurement grad_norm_elements_per_s;
  // One ThreadPool::parallel_for of every core over an empty body: waking the workers and
  // joining them, seconds per call (the fixed cost of each subgroup's AdamW that spans more
  // than one thread); optional (0 = not measured).
  Measurement pool_dispatch_s;
  // One std::thread started and joined (empty body), seconds: every update the pipeline starts
  // a reader thread per tier it reads from and a writer per tier it writes to, and joins them
  // at its end; optional (0 = not measured).
  Measurement thread_start_s;
  // The share of the host's CPU time the hypervisor took while the host figures above were
  // measured (/proc/stat steal, core/cpu_ticks.hpp); optional (none: not readable, or an older
  // profile). mlpo-tune --validate holds a run's share against it.
  std::optional<double> cpu_steal;
  ModelComputeFigures cpu_model;  // the CPU backend's forward/backward per part (preferred to the GEMM)
  // The same on one thread (optional; measured when the host has several cores): what one
  // rank of several on the node gets (`mlpo-run --threads 1` under mpirun).
  ModelComputeFigures cpu_model_one_thread;
};

// One GEMM shape a transformer layer runs (out[m,n] = x[m,k] @ w[n,k]^T, bf16 in, fp32 accumulate).
struct GemmFigure {
  std::string name;  // "qkv", "out_proj", "mlp_up", "mlp_down"
  std::int64_t m = 0, n = 0, k = 0;
  Measurement tflops;
};

struct GpuProfile {
  std::string model;
  std::int64_t count = 1;
  std::int64_t memory_bytes = 0;
  std::int64_t sm_count = 0;
  Measurement bf16_tflops;
  Measurement hbm_gbps;
  Measurement h2d_gbps;
  Measurement d2h_gbps;
  Measurement bidirectional_gbps;
  std::vector<GemmFigure> gemm;  // per transformer shape; bf16_tflops is their aggregate
  // Aggregates over all `count` GPUs driven at once (optional; 0 = not measured).
  Measurement all_bf16_tflops;
  Measurement all_h2d_gbps;
  Measurement all_d2h_gbps;
};

// A tier's throughput curves at one more I/O setting than its main one (`mlpo-profile
// --io-settings BS:QD,...`): the same write, read and read+write passes at another block size
// and queue depth per stream. Plans that set that block size and queue depth (plan io) are
// modelled with these curves; the tuner searches the settings every streamed tier has.
struct TierIoSetting {
  std::int64_t block_size = kDefaultIoBlockSize;
  std::int64_t queue_depth = kDefaultIoQueueDepth;
  std::vector<CurvePoint> read_gbps;  // as TierProfile's
  std::vector<CurvePoint> write_gbps;
  std::vector<CurvePoint> mixed_read_gbps;
  std::vector<CurvePoint> mixed_write_gbps;
  IoSetting io_setting() const { return {block_size, queue_depth}; }
};

struct TierProfile {
  std::string name;
  std::string path;  // empty for kind memory
  TierKind kind = TierKind::other;
  std::int64_t capacity_bytes = 0;
  std::int64_t free_bytes = 0;
  std::int64_t block_size = kDefaultIoBlockSize;  // the main curves' I/O setting
  std::int64_t queue_depth = kDefaultIoQueueDepth;
  bool direct_io = true;
  std::vector<CurvePoint> read_gbps;  // aggregate GB/s at 1, 2, 4, ... streams
  std::vector<CurvePoint> write_gbps;
  // Reads and writes in flight together (optional; empty in profiles made before it was
  // measured): at n streams of each, the read GB/s and the write GB/s achieved at once.
  // Both curves have the same points.
  std::vector<CurvePoint> mixed_read_gbps;
  std::vector<CurvePoint> mixed_write_gbps;
  Measurement latency_us;  // first-byte latency of a block read
  // The update's two sides at once (optional; 0: not measured): one reader and one writer on
  // the tier while AdamW runs on every core, as the update pipeline runs them. io_ratio: the
  // tier's bytes/s then over the same pass with the cores idle; adam_ratio: AdamW's
  // elements/s then over AdamW alone. On a machine whose storage takes CPU time from the cores
  // (a virtio disk emulated on the vCPUs' hosts) both are below 1.
  double io_ratio_adam_busy = 0;
  double adam_ratio_io_busy = 0;
  // Also there (optional; 0: not measured): when a reader and a writer take turns on one
  // node-wide slot (a concurrency limit of 1), the tier idles from one transfer's completion
  // to the next one's submission: slot_handoff_us with the cores idle; and when each read's
  // subgroup starts its AdamW on every core as the read is done, the next handoff waits
  // slot_handoff_waits_adam (0..1) of that AdamW on top (1: AdamW holds the cores until done).
  double slot_handoff_us = 0;
  double slot_handoff_waits_adam = 0;
  // More I/O settings measured (optional; empty: only block_size x queue_depth above).
  std::vector<TierIoSetting> io_settings;

  bool has_mixed() const { return !mixed_read_gbps.empty(); }
  // This tier with the curves measured at `block_size` x `queue_depth` (the main ones or one
  // of io_settings; everything else unchanged); nullopt when that setting was not measured.
  std::optional<TierProfile> at_io_setting(const IoSetting& setting) const;
  // Takes `s`'s block size, queue depth and curves as the tier's main ones.
  void use_curves(const TierIoSetting& s);
  // Every setting measured: the main one first, then io_settings in order.
  std::vector<IoSetting> measured_io_settings() const;
  IoSetting io_setting() const { return {block_size, queue_depth}; }  // the main curves'

  double read_at(double streams) const { return interpolate(read_gbps, streams); }
  double write_at(double streams) const { return interpolate(write_gbps, streams); }
};

// Collective rates of one path (ZeRO-3's per-layer all-gather and reduce-scatter), as the
// executor's Communicator runs them: time of one collective over a full buffer of N bytes
// (the gathered bf16 layer; the fp32 gradients before the reduce-scatter) with W ranks is
// `latency + N * (W-1)/W / bandwidth` — the "bus bandwidth" convention of nccl-tests, so one
// figure describes any W. measured = false for a path nobody gave or measured (not modelled).
struct CollectiveRates {
  bool measured = false;
  std::int64_t ranks = 0;           // ranks it was measured with (0: given by the user)
  Measurement all_gather_gbps;      // bus GB/s at layer-sized messages
  Measurement reduce_scatter_gbps;  // bus GB/s, including the rank-order sum
  Measurement latency_us;           // per collective, small messages
};

// How the ranks exchange weights and gradients. host_mpi: MPI over host buffers between the
// ranks of one node (what `mlpo-run` uses; `mlpo-profile --comm` measures it). nccl: device
// buffers inside a node (given by the user); inter_node: between nodes (`mlpo-profile
// --comm-between-nodes LAUNCHER` measures it, or the user gives it); any of them may be absent.
struct CommProfile {
  CollectiveRates host_mpi;
  CollectiveRates nccl;
  CollectiveRates inter_node;
};

struct Profile {
  std::string hostname;
  std::string measured_at;  // ISO 8601
  std::string notes;
  HostProfile host;
  std::vector<GpuProfile> gpus;
  std::string gpus_reason;  // why `gpus` is empty
  std::vector<TierProfile> tiers;
  CommProfile comm;  // optional in JSON ("comm"); absent paths are not modelled

  const TierProfile* find_tier(const std::string& name) const;
  // The tier's index in `tiers`, or tiers.size() when there is none of that name.
  std::size_t tier_index(const std::string& name) const;
  // GPUs per node (every entry's count); 0 on a profile without GPUs.
  std::int64_t gpu_count() const;
};

// Parses and validates; errors name the field (`tiers[1].read_gbps[0].value: must be > 0`).
Profile profile_from_json(const Json& json);
Json to_json(const Profile& profile);
Profile load_profile(const std::string& path);
// The profile's notes when it was measured on another host (an example profile, a
// colleague's machine): what a tool shows when it uses it ("EXAMPLE, NOT MEASURED: ..."); ""
// for a profile of this host or one without notes.
std::string notes_from_elsewhere(const Profile& profile);

Json to_json(const Measurement& m);
// One collective path's figures, as stored under "comm" (`path` names it in errors).
Json to_json(const CollectiveRates& c);
CollectiveRates collective_rates_from_json(const Json& json, const std::string& path);

}  // namespace mlpo
