#include "executor/offload/state_store.hpp"

#include "core/error.hpp"
#include "executor/io/capacity.hpp"
#include "executor/io/tier_layout.hpp"

namespace mlpo::offload {

namespace {

std::vector<double> fractions_of(const Plan& plan) {
  std::vector<double> f;
  for (const auto& t : plan.tiers) f.push_back(t.fraction);
  return f;
}

}  // namespace

std::vector<io::Tier> io_tiers_of(const Plan& plan) {
  std::vector<io::Tier> out;
  for (const auto& t : plan.tiers) {
    if (t.kind == TierKind::memory) continue;
    io::Tier tier;
    tier.name = t.name;
    tier.path = t.path;
    tier.block_size = static_cast<std::uint64_t>(plan.io_block_size);
    tier.queue_depth = static_cast<unsigned>(plan.io_queue_depth);
    tier.direct_io = plan.direct_io && !updated_in_place(t.kind);  // a mapped file is not read or written
    tier.crc = plan.crc;
    out.push_back(tier);
  }
  return out;
}

StateStore::StateStore(const Plan& plan, const RankShard& shard, io::TierSet* tiers, const std::string& run,
                       bool fp32_grads)
    : shard_(shard),
      layout_(shard.elements, plan.subgroup_elements),
      placement_(fractions_of(plan), layout_.count()),
      tiers_(tiers) {
  int next_io = 0;
  for (const auto& t : plan.tiers) {
    io_tier_of_plan_tier_.push_back(t.kind == TierKind::memory ? -1 : next_io++);
    in_place_.push_back(updated_in_place(t.kind));
  }
  MLPO_CHECK(next_io == static_cast<int>(io_tier_count()), "TierSet must hold exactly the plan's file tiers");

  // Memory-tier subgroups: arrays of this process.
  std::int64_t resident_count = 0;
  for (std::int64_t s = 0; s < layout_.count(); ++s)
    resident_index_.push_back(io_tier(s) < 0 ? resident_count++ : -1);
  const std::int64_t floats = floats_per_array();
  if (resident_count > 0) {
    resident_ = std::make_unique<float[]>(static_cast<std::size_t>(resident_count * 3 * floats));
    if (fp32_grads)
      resident_grads_ = std::make_unique<float[]>(static_cast<std::size_t>(resident_count * floats));
  }

  // File tiers: capacity check of everything first, then create and preallocate.
  if (tiers_) {
    std::vector<std::uint64_t> bytes(tiers_->size(), 0);
    for (std::size_t p = 0; p < plan.tiers.size(); ++p) {
      int t = io_tier_of_plan_tier_[p];
      if (t < 0) continue;
      std::uint64_t per =
          static_cast<std::uint64_t>(layout_.extent_bytes() + (fp32_grads ? layout_.array_bytes() : 0));
      bytes[static_cast<std::size_t>(t)] =
          per * static_cast<std::uint64_t>(placement_.subgroups_on(static_cast<int>(p)));
    }
    tiers_->check_capacity(bytes);
    for (std::size_t p = 0; p < plan.tiers.size(); ++p) {
      int t = io_tier_of_plan_tier_[p];
      if (t < 0) continue;
      const auto n = static_cast<std::uint64_t>(placement_.subgroups_on(static_cast<int>(p)));
      auto& tier = (*tiers_)[static_cast<std::size_t>(t)];
      const std::uint64_t state_bytes = n * static_cast<std::uint64_t>(layout_.extent_bytes());
      const std::uint64_t grad_bytes = n * static_cast<std::uint64_t>(layout_.array_bytes());
      state_files_.push_back(&tier.open_file(io::state_file_name(run, shard.rank), state_bytes));
      grad_files_.push_back(fp32_grads ? &tier.open_file(io::grad_file_name(run, shard.rank), grad_bytes)
                                       : nullptr);
      const bool map = in_place_[p];
      state_maps_.push_back(map ? std::make_unique<io::MappedFile>(*state_files_.back(), state_bytes)
                                : nullptr);
      grad_maps_.push_back(
          map && fp32_grads ? std::make_unique<io::MappedFile>(*grad_files_.back(), grad_bytes) : nullptr);
    }
  }
  if (plan.crc) {
    for (std::int64_t s = 0; s < layout_.count(); ++s)
      if (io_tier(s) >= 0) integrity_.add_subgroup(s, layout_.subgroup(s).elements);
  }
}

std::string StateStore::where(std::int64_t s) const {
  const auto t = io_tier(s);
  if (t < 0) return "memory tier, subgroup " + std::to_string(s);
  const auto begin = static_cast<std::uint64_t>(home(s).extent * layout_.extent_bytes());
  return "tier '" + state_files_[static_cast<std::size_t>(t)]->tier_name() + "' (" +
         state_files_[static_cast<std::size_t>(t)]->path().string() + "), subgroup " + std::to_string(s) +
         " (bytes " + std::to_string(begin) + ".." +
         std::to_string(begin + static_cast<std::uint64_t>(layout_.extent_bytes())) + ")";
}

namespace {
// A mapped page past the end of its file is SIGBUS when touched: look before touching.
void check_not_truncated(const io::TierFile& file, const io::MappedFile& map) {
  const std::uint64_t size = file.size();
  if (size >= map.size()) return;
  throw Error("tier '" + file.tier_name() + "' (" + file.path().string() + "): the mapped state file holds " +
              std::to_string(size) + " bytes, " + std::to_string(map.size()) +
              " are in use: it was truncated outside MLPO while the run was using it; the state in it is "
              "lost, restore "
              "it from a checkpoint (and keep other programs away from the tier directory)");
}
}  // namespace

float* StateStore::resident_extent(std::int64_t subgroup) {
  MLPO_CHECK(resident(subgroup), "subgroup " + std::to_string(subgroup) + " is not resident");
  if (const int t = io_tier(subgroup); t >= 0) {
    const auto& map = state_maps_[static_cast<std::size_t>(t)];
    check_not_truncated(*state_files_[static_cast<std::size_t>(t)], *map);
    std::byte* base = map->data();
    return reinterpret_cast<float*>(base + home(subgroup).extent * layout_.extent_bytes());
  }
  const std::int64_t index = resident_index_.at(static_cast<std::size_t>(subgroup));
  return resident_.get() + index * 3 * floats_per_array();
}

float* StateStore::resident_grad(std::int64_t subgroup) {
  MLPO_CHECK(resident(subgroup), "subgroup " + std::to_string(subgroup) + " is not resident");
  if (const int t = io_tier(subgroup); t >= 0) {
    const auto& map = grad_maps_[static_cast<std::size_t>(t)];
    MLPO_CHECK(map != nullptr, "no gradient file: store made without fp32 gradients");
    check_not_truncated(*grad_files_[static_cast<std::size_t>(t)], *map);
    return reinterpret_cast<float*>(map->data() + home(subgroup).extent * layout_.array_bytes());
  }
  const std::int64_t index = resident_index_.at(static_cast<std::size_t>(subgroup));
  MLPO_CHECK(resident_grads_ != nullptr,
             "subgroup " + std::to_string(subgroup) + " has no resident gradient");
  return resident_grads_.get() + index * floats_per_array();
}

io::IoRequest StateStore::read_state(std::int64_t s, std::byte* buffer) {
  const auto t = static_cast<std::size_t>(io_tier(s));
  return (*tiers_)[t].read(*state_files_[t],
                           static_cast<std::uint64_t>(home(s).extent * layout_.extent_bytes()),
                           static_cast<std::uint64_t>(layout_.extent_bytes()), buffer, {},
                           chunk_checked(s) ? io::CrcBy::caller : io::CrcBy::engine);
}

io::IoRequest StateStore::write_state(std::int64_t s, const std::byte* buffer) {
  const auto t = static_cast<std::size_t>(io_tier(s));
  return (*tiers_)[t].write(*state_files_[t],
                            static_cast<std::uint64_t>(home(s).extent * layout_.extent_bytes()),
                            static_cast<std::uint64_t>(layout_.extent_bytes()), buffer, {},
                            chunk_checked(s) ? io::CrcBy::caller : io::CrcBy::engine);
}

io::IoRequest StateStore::read_grad(std::int64_t s, std::byte* buffer) {
  const auto t = static_cast<std::size_t>(io_tier(s));
  MLPO_CHECK(grad_files_[t] != nullptr, "no gradient file: store made without fp32 gradients");
  return (*tiers_)[t].read(*grad_files_[t],
                           static_cast<std::uint64_t>(home(s).extent * layout_.array_bytes()),
                           static_cast<std::uint64_t>(layout_.array_bytes()), buffer);
}

io::IoRequest StateStore::write_grad(std::int64_t s, const std::byte* buffer) {
  const auto t = static_cast<std::size_t>(io_tier(s));
  MLPO_CHECK(grad_files_[t] != nullptr, "no gradient file: store made without fp32 gradients");
  return (*tiers_)[t].write(*grad_files_[t],
                            static_cast<std::uint64_t>(home(s).extent * layout_.array_bytes()),
                            static_cast<std::uint64_t>(layout_.array_bytes()), buffer);
}

}  // namespace mlpo::offload
