#include "executor/model/host_streamed_weights.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo::model {

HostStreamedWeights::HostStreamedWeights(Backend& backend, const ParameterLayout& layout, DType storage,
                                         const void* host_weights, int slots)
    : backend_(backend),
      fetch_queue_(backend.make_copy_queue()),
      layout_(layout),
      storage_(storage),
      host_(static_cast<const char*>(host_weights)),
      slot_elements_(largest_part_elements(layout)) {
  if (slots < 1) throw Error("parameter offload: device slots must be >= 1, got " + std::to_string(slots));
  MLPO_CHECK(host_weights != nullptr, "parameter offload needs the host weights");
  slots_.resize(static_cast<std::size_t>(slots));
  for (Slot& s : slots_) s.buffer = backend.allocate(storage, slot_elements_);
}

HostStreamedWeights::~HostStreamedWeights() { fetch_queue_->wait(); }

std::int64_t HostStreamedWeights::device_bytes() const {
  return static_cast<std::int64_t>(slots_.size()) * slot_elements_ *
         static_cast<std::int64_t>(dtype_size(storage_));
}

void HostStreamedWeights::drop_device_copies() {
  fetch_queue_->wait();
  for (Slot& s : slots_) {
    MLPO_CHECK(!s.held, "drop_device_copies() while a part is held");
    s.part = -1;
  }
}

int HostStreamedWeights::slot_holding(int part) const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].part == part) return static_cast<int>(i);
  return -1;
}

int HostStreamedWeights::refillable_slot(const std::vector<int>& keep) const {
  auto age = [](const Slot& s) { return s.part < 0 ? std::int64_t{-1} : s.last_use; };  // empty slots first
  int best = -1;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.held || std::find(keep.begin(), keep.end(), s.part) != keep.end()) continue;
    if (best < 0 || age(s) < age(slots_[static_cast<std::size_t>(best)])) best = static_cast<int>(i);
  }
  return best;
}

void HostStreamedWeights::fetch(WeightPart part, int slot) {
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  const Tensor all = s.buffer.view(storage_, {slot_elements_});
  const auto size = static_cast<std::int64_t>(dtype_size(storage_));
  std::int64_t at = 0;
  for (const ParameterRange& r : part_ranges(layout_, part)) {
    fetch_queue_->to_device(all.slice(at, {r.count}), host_ + r.offset * size);
    fetched_bytes_ += r.count * size;
    at += r.count;
  }
  s.part = part_index(layout_, part);
  s.last_use = ++clock_;
  ++fetches_;
}

// Fetches walk_[position ...] into free slots, as many as fit without touching a held part or
// one of those about to be used.
void HostStreamedWeights::prefetch_from(std::size_t position) {
  const std::size_t ahead = slots_.size() - 1;
  std::vector<int> keep;
  for (std::size_t j = position; j < walk_.size() && j < position + ahead; ++j)
    keep.push_back(part_index(layout_, walk_[j]));
  for (std::size_t j = position; j < walk_.size() && j < position + ahead; ++j) {
    const int part = part_index(layout_, walk_[j]);
    if (slot_holding(part) >= 0) continue;
    const int slot = refillable_slot(keep);
    if (slot < 0) return;
    fetch(walk_[j], slot);
  }
}

void HostStreamedWeights::begin_pass(WeightPass pass) {
  for (Slot& s : slots_) s.held = false;
  walk_ = weight_walk(layout_, pass);
  next_ = 0;
  prefetch_from(0);
}

PartWeights HostStreamedWeights::acquire(WeightPart part) {
  MLPO_CHECK(next_ < walk_.size() && walk_[next_] == part,
             "acquire(" + part.describe() + ") out of the walk order (expected " +
                 (next_ < walk_.size() ? walk_[next_].describe() : std::string("no more parts")) + ")");
  ++next_;
  int slot = slot_holding(part_index(layout_, part));
  if (slot < 0) {
    slot = refillable_slot({});
    MLPO_CHECK(slot >= 0, "no free weight slot for " + part.describe());
    fetch(part, slot);
    ++demand_fetches_;
  }
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  s.held = true;
  s.last_use = ++clock_;
  fetch_queue_
      ->order_compute_after_copies();  // the part's ops wait for its fetch, not for the prefetches below
  prefetch_from(next_);

  PartWeights w;
  const Tensor all = s.buffer.view(storage_, {slot_elements_});
  std::int64_t at = 0;
  for (const ParameterRange& r : part_ranges(layout_, part)) {
    w.add(r, all.slice(at, {r.count}));
    at += r.count;
  }
  return w;
}

void HostStreamedWeights::release(WeightPart part) {
  const int slot = slot_holding(part_index(layout_, part));
  MLPO_CHECK(slot >= 0 && slots_[static_cast<std::size_t>(slot)].held,
             "release(" + part.describe() + ") of a part not held");
  slots_[static_cast<std::size_t>(slot)].held = false;
}

}  // namespace mlpo::model
