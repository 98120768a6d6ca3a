#pragma once
// WeightProvider: where TransformerModel takes its weights from, one part at a time. The
// model never reads a weight outside an acquire()/release() pair, and it acquires the parts
// in a fixed order known in advance (weight_walk), so a provider can fetch the next part
// while the current one computes:
//
//   forward():   begin_pass(forward),  embedding, layer 0, ..., layer L-1, head
//   backward():  begin_pass(backward), head, layer L-1, ..., layer 0
//
// A part is the embedding, one transformer layer, or the head (final norm + lm_head; with
// tied embeddings the head's lm_head IS the embedding, so the head part holds the final norm
// and the embedding). backward() acquires every layer again (it recomputes each layer's
// forward from its checkpointed input, then differentiates it); the embedding is not needed in
// backward (its gradient is a scatter-add of the output gradient, untied or tied).
//
// Implementations, chosen by the trainer:
//   ResidentWeights      every weight in one flat device buffer (the default; acquire is free)
//   HostStreamedWeights  weights in host memory, a bounded number of parts on the device,
//                        copied ahead of use (parameter offload, one rank)
//   GatheredWeights      ZeRO-3: each rank holds its shard, parts are all-gathered one ahead
// Results never depend on the provider: every one hands the model the same bits.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "executor/model/parameter_layout.hpp"
#include "kernels/tensor.hpp"

namespace mlpo::model {

enum class WeightPass { forward, backward };

struct WeightPart {
  enum class Kind { embedding, layer, head };
  Kind kind = Kind::embedding;
  int layer = -1;  // for Kind::layer

  static WeightPart embedding() { return {Kind::embedding, -1}; }
  static WeightPart transformer_layer(int l) { return {Kind::layer, l}; }
  static WeightPart head() { return {Kind::head, -1}; }
  friend bool operator==(const WeightPart&, const WeightPart&) = default;
  std::string describe() const;  // "embedding", "layer 3", "head"
};

// The flat-index ranges a part's weights come from, in the order they are laid out back to
// back in the part's buffer: embedding -> {embedding}; layer l -> {layer l}; head -> {final
// norm + lm_head}, or {final norm, embedding} when tied.
std::vector<ParameterRange> part_ranges(const ParameterLayout& layout, WeightPart part);
std::int64_t part_elements(const ParameterLayout& layout, WeightPart part);
// The largest part: what one device buffer of a streaming provider must hold.
std::int64_t largest_part_elements(const ParameterLayout& layout);
// Parts in the order TransformerModel acquires them in a pass (see above).
std::vector<WeightPart> weight_walk(const ParameterLayout& layout, WeightPass pass);
// Dense numbering of the parts: embedding 0, layer l -> 1 + l, head -> layers + 1.
int part_index(const ParameterLayout& layout, WeightPart part);

// The weights of one acquired part: each of its ranges as a device tensor of the storage type.
class PartWeights {
 public:
  // `data` holds range.count elements, element i being flat parameter range.offset + i.
  void add(ParameterRange range, Tensor data);
  // The tensor of `entry` (shape as the layout gives it). The entry must lie in one of the
  // part's ranges (an internal error otherwise).
  Tensor entry(const ParameterEntry& e) const;

 private:
  struct Piece {
    ParameterRange range;
    Tensor data;
  };
  std::array<Piece, 2> pieces_{};
  int count_ = 0;
};

class WeightProvider {
 public:
  virtual ~WeightProvider() = default;

  virtual DType storage() const = 0;
  // Bytes of device memory the provider holds for weights (for memory accounting and tests).
  virtual std::int64_t device_bytes() const = 0;

  // A pass starts: the model will acquire weight_walk(layout, pass) in order. Whatever the
  // previous pass left (parts it never acquired, after an error) is dropped.
  virtual void begin_pass(WeightPass pass) = 0;
  // The part's weights on the device, valid until release(part). Parts must be acquired in
  // the pass's walk order; at most one is held at a time.
  virtual PartWeights acquire(WeightPart part) = 0;
  virtual void release(WeightPart part) = 0;
};

// acquire() in the constructor, release() in the destructor (also when an op throws).
class AcquiredPart {
 public:
  AcquiredPart(WeightProvider& provider, WeightPart part)
      : provider_(provider), part_(part), weights_(provider.acquire(part)) {}
  ~AcquiredPart() { provider_.release(part_); }
  AcquiredPart(const AcquiredPart&) = delete;
  AcquiredPart& operator=(const AcquiredPart&) = delete;
  const PartWeights& weights() const { return weights_; }
  Tensor entry(const ParameterEntry& e) const { return weights_.entry(e); }

 private:
  WeightProvider& provider_;
  WeightPart part_;
  PartWeights weights_;
};

}  // namespace mlpo::model
