// The host memory check of a training run: its accounting of the CPU backend's model, the
// host weights and gradients equals what the trainer allocates for `tiny` (within 1 %: the
// accounting adds the gradient-norm chunk sums and token ids, which are not backend memory),
// the offload engine's items are in the list, and a run needing more than the memory it may
// plan for (--host-memory-limit) is refused before anything is written, naming every part and
// the fixes.
#include "executor/train/internal/training_host_memory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/host_streamed_weights.hpp"
#include "executor/model/resident_weights.hpp"
#include "executor/compute/gradient_handover.hpp"
#include "executor/compute/micro_batch_gradient_sum.hpp"
#include "executor/train/training_loop.hpp"
#include "tests/executor/model/counting_backend.hpp"
#include "tests/executor/train/training_objects.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

// The parts of `need` that are not the offload engine's (those carry a plan field).
std::uint64_t model_and_host_bytes(const offload::HostMemoryNeed& need) {
  std::uint64_t sum = 0;
  for (const auto& item : need.items)
    if (item.field.rfind("plan ", 0) != 0) sum += item.bytes;
  return sum;
}

TEST(TrainingHostMemory, AccountingMatchesWhatTheTrainerAllocatesForTiny) {
  const model::ModelShape shape = model::shape_of(test::tiny_model());
  const Plan plan = test::memory_plan(model::ParameterLayout(shape).total());
  const RankShard shard = comm::ZeroPartition(model::ParameterLayout(shape).total(), 1, 0).mine();
  for (int accum : {1, 2, 3})
    for (bool offload : {false, true})
      for (int micro_batch : {1, 4}) {
        const compute::TrainingFootprint f{micro_batch, accum, 1, offload};
        const offload::HostMemoryNeed need = training_host_memory(shape, f, plan, shard, true);
        const TrainingAllocations allocated = allocated_by_training(shape, f);
        const auto counted = static_cast<double>(allocated.device + allocated.host);
        const auto accounted = static_cast<double>(model_and_host_bytes(need));
        EXPECT_GE(accounted, counted) << "accum=" << accum << " offload=" << offload << " B=" << micro_batch;
        EXPECT_LE(accounted, counted * 1.01)
            << "accum=" << accum << " offload=" << offload << " B=" << micro_batch;
      }
}

TEST(TrainingHostMemory, ListsTheModelOnlyOnTheCpuBackendAndTheEngineAlways) {
  const model::ModelShape shape = model::shape_of(test::tiny_model());
  const std::int64_t params = model::ParameterLayout(shape).total();
  Plan plan = test::memory_plan(params);
  plan.host_cache_subgroups = 2;
  const RankShard shard = comm::ZeroPartition(params, 1, 0).mine();
  const compute::TrainingFootprint f{2, 1, 1, false};
  const offload::HostMemoryNeed cpu = training_host_memory(shape, f, plan, shard, true);
  const offload::HostMemoryNeed gpu = training_host_memory(shape, f, plan, shard, false);
  const offload::HostMemoryNeed engine = offload::host_memory_need(plan, shard);
  EXPECT_EQ(cpu.total() - gpu.total(), model_and_host_bytes(cpu) - model_and_host_bytes(gpu));
  EXPECT_EQ(cpu.total() - model_and_host_bytes(cpu), engine.total());  // buffers, cache, memory tier
  EXPECT_EQ(gpu.items.size(), 1 + engine.items.size());                // host weights and gradients
  // The activations grow linearly with the micro-batch (A(B) = a + b B); --param-offload
  // shrinks the weights and gradients.
  auto activations = [&](int b) {
    return training_host_memory(shape, {b, 1, 1, false}, plan, shard, true).items[2].bytes;
  };
  EXPECT_GT(activations(2), activations(1));
  EXPECT_EQ(activations(8) - activations(2), 6 * (activations(2) - activations(1)));
  const offload::HostMemoryNeed offloaded = training_host_memory(shape, {2, 1, 1, true}, plan, shard, true);
  EXPECT_LT(offloaded.items[0].bytes + offloaded.items[1].bytes,
            (cpu.items[0].bytes + cpu.items[1].bytes) / 2);
}

TEST(TrainingHostMemory, RefusalIsOneLineNamingEveryPartAndTheFixes) {
  offload::HostMemoryNeed need;
  need.items = {
      {"model weights (bf16, CPU backend)", "use --param-offload", 3 << 20},
      {"activations (micro-batch 2 x seq-len 32, CPU backend)", "lower --micro-batch or --seq-len", 5 << 20},
      {"bf16 weights and gradients in host memory", "", 1 << 20},
      {"pinned subgroup buffers", "plan buffers", 2 << 20},
      {"host cache", "plan host_cache_subgroups", 4 << 20}};
  EXPECT_NE(check_training_host_memory(need, 1, {15 << 20, "MemAvailable"}, "rank 0").find("15.0 MiB"),
            std::string::npos);
  try {
    check_training_host_memory(need, 2, {20 << 20, "MemAvailable"}, "rank 0");  // two ranks: 30 MiB
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find("rank 0: the run needs 30.0 MiB of host memory (2 ranks on this node x 15.0 MiB), "
                     "20.0 MiB are available (MemAvailable; short by 10.0 MiB)"),
              std::string::npos)
        << m;
    for (const char* part : {"model weights (bf16, CPU backend) 3.0 MiB",
                             "activations (micro-batch 2 x seq-len 32, "
                             "CPU backend) 5.0 MiB",
                             "host memory 1.0 MiB", "buffers 2.0 MiB", "host cache 4.0 MiB"})
      EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
    EXPECT_NE(
        m.find("to fit: use --param-offload, lower --micro-batch or --seq-len; lower the plan's buffers, "
               "host_cache_subgroups"),
        std::string::npos)
        << m;
  }
}

// The whole run, in process: with --host-memory-limit below the need, train() refuses before
// it writes anything (no checkpoint directory), naming the limit and the parts; at the
// need it runs and notes the accounted total.
TEST(TrainingHostMemory, RunNeedingMoreThanTheLimitIsRefusedBeforeWritingAnything) {
  test::TempDir dir;
  TrainOptions o;
  o.model = test::tiny_model();
  o.data = {test::make_token_file(dir)};
  o.steps = 1;
  o.micro_batch = 2;
  o.threads = 1;
  o.blas_threads = 1;
  const model::ModelShape shape = model::shape_of(o.model);
  const std::int64_t params = model::ParameterLayout(shape).total();
  o.plan = test::memory_plan(params);
  const offload::HostMemoryNeed need =
      training_host_memory(shape, {2, 1, 1, false}, *o.plan, comm::ZeroPartition(params, 1, 0).mine(), true);
  o.checkpoint_dir = dir / "ckpt";
  o.host_memory_limit = need.total() - 1;
  try {
    train(o, {});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the run needs " + format_bytes(static_cast<double>(need.total())) + " of host memory"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("available (--host-memory-limit"), std::string::npos) << m;
    for (const char* part : {"model weights", "model gradients", "activations", "bf16 weights and gradients",
                             "pinned subgroup buffers", "tier 'mem'"})
      EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
    EXPECT_NE(m.find("use --param-offload"), std::string::npos) << m;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "ckpt"));

  o.host_memory_limit = need.total();
  std::vector<std::string> notes;
  TrainEvents events;
  events.note = [&](const std::string& line) { notes.push_back(line); };
  EXPECT_EQ(train(o, events).steps.size(), 1u);
  const std::string expected =
      "host memory: the run needs " + format_bytes(static_cast<double>(need.total()));
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                          [&](const std::string& n) { return n.rfind(expected, 0) == 0; }))
      << "no start-up note starting with: " << expected;
}

}  // namespace
}  // namespace mlpo::train
