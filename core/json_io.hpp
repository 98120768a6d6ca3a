#pragma once
// Strict JSON reading for MLPO's file formats. Every getter names the full field path in
// its error (`tiers[1].read[0].gbps: must be > 0`), and finish() rejects fields the format
// does not define, so a typo in a hand-written plan is an error rather than a silent default.

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace mlpo {

using Json = nlohmann::json;

// Reads and parses a JSON file whose document is an object (every MLPO file is one). Errors
// (missing, a directory, FIFO or device — refused before it is opened, so it never blocks —,
// unreadable, empty, not JSON, not an object) name the path and what was expected (`what`,
// e.g. "an mlpo.profile/1 profile").
Json read_json_file(const std::string& path, const std::string& what);

// Reads the file as read_json_file does and converts the document with `parse` (plan_from_json,
// profile_from_json, ...); an Error from `parse` is rethrown with the path in front of it.
template <class Parse>
auto load_json_file(const std::string& path, const std::string& what, Parse&& parse) {
  const Json j = read_json_file(path, what);
  try {
    return parse(j);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

// Writes `text` to `path` atomically: temp file in the same directory, fsync, rename,
// fsync of the directory. A crash leaves either the old file or the new one, never a mix.
void write_file_atomic(const std::string& path, const std::string& text);

class JsonObject {
 public:
  // `path` is where this object sits ("" for the document root, "tiers[1]").
  JsonObject(const Json& json, std::string path);

  // Checks `"schema": "<expected>"`, with a hint when the file is another MLPO kind.
  void expect_schema(const std::string& expected);

  bool has(const char* key) const;
  // Marks an optional field as known; returns whether it is present.
  bool optional(const char* key);
  std::string string(const char* key);
  std::string string_or(const char* key, const std::string& fallback);
  // One of `choices` (listed in the error).
  std::string choice(const char* key, std::initializer_list<const char*> choices);
  std::string choice_or(const char* key, std::initializer_list<const char*> choices,
                        const std::string& fallback);
  double number(const char* key, double min, double max);  // inclusive range
  double number_or(const char* key, double min, double max, double fallback);
  double positive(const char* key);  // > 0 and finite
  std::int64_t integer(const char* key, std::int64_t min, std::int64_t max);
  std::int64_t integer_or(const char* key, std::int64_t min, std::int64_t max, std::int64_t fallback);
  bool boolean(const char* key);
  bool boolean_or(const char* key, bool fallback);
  const Json& array(const char* key);  // required, must be an array
  JsonObject object(const char* key);  // required, must be an object
  const Json& raw(const char* key);    // any type, required

  // Path of a child field, for messages: field("read") -> "tiers[1].read".
  std::string field(const std::string& key) const;
  // Throws Error("<path>.<key>: <reason>").
  [[noreturn]] void fail(const std::string& key, const std::string& reason) const;

  // Rejects any field that no getter asked for.
  void finish() const;

 private:
  const Json& get(const char* key);
  const Json& json_;
  std::string path_;
  std::set<std::string> used_;
};

// "tiers" + 1 -> "tiers[1]"; used to build paths for array elements.
std::string element_path(const std::string& array_path, std::size_t index);

}  // namespace mlpo
