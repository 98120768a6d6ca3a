// Checkpoints stream the optimizer state: writing one (tier -> files) and resuming from it
// (files -> tier) take memory that does not grow with the state. Counted with a replaced global
// operator new (this test is its own executable for that reason): the peak of live heap bytes
// during the write and the load, for a model and one with 4x the layers, all state on a file
// tier (nothing resident, no cache). The pipeline's buffer pool is allocated before either and
// is bounded by construction (buffers x subgroup).
#include <gtest/gtest.h>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "core/model_spec.hpp"
#include "executor/comm/single_process_communicator.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/checkpoint/checkpoint.hpp"
#include "tests/executor/offload/offload_test_util.hpp"
#include "tests/executor/offload/pipeline_rig.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace {

std::atomic<std::int64_t> g_live{0}, g_peak{0};

void* counted(void* p) {
  if (!p) throw std::bad_alloc();
  const auto now = g_live += static_cast<std::int64_t>(malloc_usable_size(p));
  std::int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {}
  return p;
}

void uncounted(void* p) {
  if (!p) return;
  g_live -= static_cast<std::int64_t>(malloc_usable_size(p));
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) { return counted(std::malloc(std::max<std::size_t>(n, 1))); }
void* operator new[](std::size_t n) { return counted(std::malloc(std::max<std::size_t>(n, 1))); }
void* operator new(std::size_t n, std::align_val_t a) {
  const auto al = static_cast<std::size_t>(a);
  return counted(std::aligned_alloc(al, (std::max<std::size_t>(n, 1) + al - 1) / al * al));
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { uncounted(p); }
void operator delete[](void* p) noexcept { uncounted(p); }
void operator delete(void* p, std::size_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::size_t) noexcept { uncounted(p); }
void operator delete(void* p, std::align_val_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::align_val_t) noexcept { uncounted(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { uncounted(p); }

namespace mlpo::checkpoint {
namespace test = train::test;  // the executor tests' fixtures (tests/executor/train/train_test_util.hpp)
namespace {

// Heap bytes above the level at the call that `fn` had live at its peak.
template <class Fn>
std::int64_t peak_heap_growth(Fn&& fn) {
  const std::int64_t base = g_live.load();
  g_peak = base;
  fn();
  return g_peak.load() - base;
}

struct StreamedBytes {
  std::int64_t state_bytes = 0, write_peak = 0, load_peak = 0;
};

// Writes a checkpoint of `layers` layers of the tiny model with its state on a disk tier,
// then loads it into a fresh engine; returns the heap growth of each.
StreamedBytes checkpoint_round_trip(int layers) {
  test::TempDir dir;
  offload::testing::ScratchTiers scratch("ckpt-stream");
  ModelSpec spec = find_preset("tiny");
  spec.layers = layers;
  const model::ParameterLayout layout(model::shape_of(spec));
  const Plan plan = scratch.plan(1.0, 0, OrderPolicy::ascending);
  offload::testing::Rig rig(plan, layout.total());
  comm::SingleProcessCommunicator comm;
  const comm::ZeroPartition partition(layout.total(), 1, 0);
  const std::vector<bf16> weights(static_cast<std::size_t>(layout.total()), float_to_bf16(0.5f));
  const std::string ckpt = dir.path() + "/ckpt";
  StreamedBytes out;
  out.state_bytes = 12 * layout.total();
  out.write_peak = peak_heap_growth([&] {
    checkpoint::write_checkpoint(comm, ckpt, spec, layout, partition, weights, rig.pipeline, {1, 7, 0},
                                 Json::object());
  });

  offload::testing::Rig fresh(plan, layout.total());
  std::optional<checkpoint::Checkpoint> opened;
  out.load_peak = peak_heap_growth([&] {
    opened = checkpoint::Checkpoint::open_latest(ckpt, spec, layout.total());  // checks every file's CRC32C
    ASSERT_TRUE(opened.has_value());
    fresh.pipeline.load_state([&](const Subgroup& sg, float* p, float* m, float* v) {
      opened->read_state(sg.begin, sg.elements, p, m, v);
    });
  });
  // The loaded state is the written one.
  std::int64_t checked = 0;
  std::vector<float> first;
  rig.pipeline.visit_state([&](const Subgroup& sg, const float* p, const float*, const float*) {
    if (sg.index == 0) first.assign(p, p + sg.elements);
  });
  fresh.pipeline.visit_state([&](const Subgroup& sg, const float* p, const float*, const float*) {
    if (sg.index == 0) checked = std::equal(first.begin(), first.end(), p) ? sg.elements : -1;
  });
  EXPECT_EQ(checked, static_cast<std::int64_t>(first.size()));
  return out;
}

TEST(CheckpointStreaming, HeapPeakDoesNotGrowWithTheState) {
  const StreamedBytes small = checkpoint_round_trip(4), large = checkpoint_round_trip(16);
  ASSERT_GT(large.state_bytes, 3 * small.state_bytes);
  for (const auto& [name, bytes] : {std::pair{"small_write_peak", small.write_peak},
                                    {"small_load_peak", small.load_peak},
                                    {"large_write_peak", large.write_peak},
                                    {"large_load_peak", large.load_peak}})
    RecordProperty(name, std::to_string(bytes));
  // A fixed bound far below either state (~10 and ~38 MB): holding the state, or one array of
  // it, in memory would exceed it.
  const std::int64_t bound = 4 << 20;
  EXPECT_LT(small.write_peak, bound);
  EXPECT_LT(large.write_peak, bound);
  EXPECT_LT(small.load_peak, bound);
  EXPECT_LT(large.load_peak, bound);
  // And independent of the state's size, up to small bookkeeping (per-subgroup records).
  EXPECT_LT(large.write_peak, small.write_peak + (256 << 10)) << small.write_peak;
  EXPECT_LT(large.load_peak, small.load_peak + (256 << 10)) << small.load_peak;
}

}  // namespace
}  // namespace mlpo::checkpoint
