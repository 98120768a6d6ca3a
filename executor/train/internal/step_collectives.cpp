#include "executor/train/internal/step_collectives.hpp"

#include <algorithm>
#include <cstdint>

namespace mlpo::train {

Tensor StepCollectives::bytes_view(void* p, std::size_t bytes) {
  return Tensor(p, DType::i32, {static_cast<std::int64_t>(bytes / 4)});
}

void* StepCollectives::staging(std::size_t bytes) {
  if (buffer_.bytes() < bytes) buffer_ = backend_.allocate(std::max<std::size_t>(bytes, 4096));
  return buffer_.data();
}

}  // namespace mlpo::train
