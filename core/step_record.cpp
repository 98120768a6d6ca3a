#include "core/step_record.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/internal/json_lines.hpp"

namespace mlpo {

namespace {

// A field of the record under its name in the log: one table each for writing and reading.
template <class T>
struct Field {
  const char* key;
  T StepRecord::*member;
};

constexpr Field<double> kNumbers[] = {{"grad_norm", &StepRecord::grad_norm},
                                      {"forward_s", &StepRecord::forward_s},
                                      {"backward_s", &StepRecord::backward_s},
                                      {"update_s", &StepRecord::update_s},
                                      {"prefetch_stall_s", &StepRecord::prefetch_stall_s}};

constexpr Field<std::int64_t> kCounts[] = {{"cache_hits", &StepRecord::cache_hits},
                                           {"reads", &StepRecord::reads},
                                           {"writes", &StepRecord::writes},
                                           {"elements", &StepRecord::elements}};

constexpr Field<std::optional<double>> kOptionalNumbers[] = {
    {"adam_s", &StepRecord::adam_s},
    {"cpu_steal", &StepRecord::cpu_steal},
    {"lr", &StepRecord::lr},
    {"clip_scale", &StepRecord::clip_scale},
    {"tokens", &StepRecord::tokens},
    {"tokens_per_s", &StepRecord::tokens_per_s},
    {"step_s", &StepRecord::step_s},
    {"weights_to_device_s", &StepRecord::weights_to_device_s},
    {"checkpoint_s", &StepRecord::checkpoint_s},
    {"gradient_copy_wait_s", &StepRecord::gradient_copy_wait_s},
    {"exchange_cpu_s", &StepRecord::exchange_cpu_s},
    {"gather_wait_s", &StepRecord::gather_wait_s},
    {"eval_loss", &StepRecord::eval_loss},
    {"eval_s", &StepRecord::eval_s},
    {"gradient_flush_s", &StepRecord::gradient_flush_s},
    {"update_cpu_idle", &StepRecord::update_cpu_idle},
    {"io_bound_s", &StepRecord::io_bound_s},
    {"adam_bound_s", &StepRecord::adam_bound_s},
    {"bound_s", &StepRecord::bound_s},
    {"ideal_bound_s", &StepRecord::ideal_bound_s},
    {"achieved_over_bound", &StepRecord::achieved_over_bound}};

constexpr Field<std::optional<std::int64_t>> kOptionalCounts[] = {
    {"checkpoint_bytes", &StepRecord::checkpoint_bytes},
    {"weight_fetch_bytes", &StepRecord::weight_fetch_bytes},
    {"weight_demand_fetches", &StepRecord::weight_demand_fetches}};

Json tier_json(const StepTierRecord& t) {
  Json j = Json::object();
  j["name"] = t.name;
  j["read_bytes"] = t.read_bytes;
  j["write_bytes"] = t.write_bytes;
  j["busy_s"] = t.busy_s;
  j["slot_wait_s"] = t.slot_wait_s;
  if (t.device)
    j["device"] = Json{{"busy_s", t.device->busy_s},
                       {"read_bytes", t.device->read_bytes},
                       {"write_bytes", t.device->write_bytes}};
  if (t.in_place) j["in_place"] = true;
  return j;
}

bool has(const Json& obj, const char* key) { return obj.contains(key) && !obj[key].is_null(); }

std::int64_t count_field(const Json& obj, const char* key, const std::string& where) {
  return std::llround(number_field(obj, key, where));
}

StepTierRecord tier_from_json(const Json& t, const std::string& where) {
  if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
    throw Error(where + ": every entry of 'tiers' needs a string 'name'");
  StepTierRecord tier{t["name"].get<std::string>(), count_field(t, "read_bytes", where),
                      count_field(t, "write_bytes", where), number_field(t, "busy_s", where),
                      number_field(t, "slot_wait_s", where)};
  if (t.contains("device") && t["device"].is_object()) {
    const Json& d = t["device"];
    tier.device = StepDeviceRecord{number_field(d, "busy_s", where), count_field(d, "read_bytes", where),
                                   count_field(d, "write_bytes", where)};
  }
  tier.in_place = t.contains("in_place") && t["in_place"] == true;
  return tier;
}

std::vector<double> numbers_from_json(const Json& j, const char* key, const std::string& where) {
  if (!j[key].is_array()) throw Error(where + ": field '" + key + "' must be an array of numbers");
  std::vector<double> numbers;
  for (const Json& v : j[key]) {
    if (!v.is_number()) throw Error(where + ": field '" + key + "' must be an array of numbers");
    numbers.push_back(v.get<double>());
  }
  return numbers;
}

}  // namespace

Json to_json(const StepRecord& r) {
  Json j = Json::object();
  j["step"] = r.step;
  j["loss"] = r.loss ? Json(*r.loss) : Json(nullptr);
  for (const auto& f : kNumbers) j[f.key] = r.*f.member;
  for (const auto& f : kCounts) j[f.key] = r.*f.member;
  for (const auto& f : kOptionalNumbers)
    if (r.*f.member) j[f.key] = *(r.*f.member);
  for (const auto& f : kOptionalCounts)
    if (r.*f.member) j[f.key] = *(r.*f.member);
  if (r.rank_update_s) j["rank_update_s"] = *r.rank_update_s;
  j["tiers"] = Json::array();
  for (const StepTierRecord& t : r.tiers) j["tiers"].push_back(tier_json(t));
  return j;
}

StepRecord step_record_from_json(const Json& j, const std::string& where) {
  StepRecord r;
  if (!j.contains("step") || !j["step"].is_number_integer() || j["step"].get<std::int64_t>() < 0)
    throw Error(where + ": field 'step' must be a non-negative integer, got " +
                j.value("step", Json()).dump());
  r.step = j["step"].get<std::int64_t>();
  if (has(j, "loss")) r.loss = number_field(j, "loss", where);
  for (const auto& f : kNumbers) r.*f.member = number_field(j, f.key, where);
  for (const auto& f : kCounts) r.*f.member = count_field(j, f.key, where);
  for (const auto& f : kOptionalNumbers)
    if (has(j, f.key)) r.*f.member = number_field(j, f.key, where);
  for (const auto& f : kOptionalCounts)
    if (has(j, f.key)) r.*f.member = count_field(j, f.key, where);
  if (has(j, "rank_update_s")) r.rank_update_s = numbers_from_json(j, "rank_update_s", where);
  if (j.contains("tiers")) {
    if (!j["tiers"].is_array()) throw Error(where + ": field 'tiers' must be an array");
    for (const Json& t : j["tiers"]) r.tiers.push_back(tier_from_json(t, where));
  }
  return r;
}

}  // namespace mlpo
