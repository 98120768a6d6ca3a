#pragma once
// Which weights AdamW's decoupled weight decay applies to (`mlpo-run --weight-decay-on`):
//   matrices (default) — every matrix, embeddings and lm_head included, but not the RMSNorm
//                        gains: the common practice of Hugging Face and Megatron (which also
//                        exempt biases; LLaMA has none). Decaying a gain pulls it towards 0,
//                        i.e. shrinks the layer's output, which nothing asks for.
//   all                — every weight, norm gains included (MLPO before this option).
// The choice is recorded in the checkpoint's settings ("weight_decay_on"), so a resume that
// changes it warns like any other hyper-parameter.

#include <string>

#include "executor/model/parameter_layout.hpp"
#include "core/rank_shard.hpp"
#include "executor/offload/weight_decay_mask.hpp"

namespace mlpo::train {

enum class WeightDecayScope { matrices, all };

// "matrices" or "all"; anything else is an mlpo::Error naming `option` and the choices.
WeightDecayScope parse_weight_decay_scope(const std::string& text, const std::string& option);
const char* to_string(WeightDecayScope scope);

// The mask of `shard` for `scope`: the layout's norm ranges exempt (matrices) or none (all).
offload::WeightDecayMask weight_decay_mask(WeightDecayScope scope, const model::ParameterLayout& layout,
                                           const RankShard& shard);

}  // namespace mlpo::train
