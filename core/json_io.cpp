#include "core/json_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/path_checks.hpp"

namespace mlpo {

namespace {

std::string type_name(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

Json read_json_file(const std::string& path, const std::string& what) {
  check_input_file(path, what);  // a FIFO or device would block the read below, a directory fail obscurely
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (" + errno_text(errno) + "); expected " + what);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(path + ": file is empty; expected " + what);
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    std::string msg = e.what();
    auto pos = msg.find("] ");
    if (pos != std::string::npos) msg = msg.substr(pos + 2);
    throw Error(path + ": not valid JSON (" + msg + "); expected " + what);
  }
  if (!json.is_object())
    throw Error(path + ": the document is " + type_name(json) + ", not a JSON object; expected " + what);
  return json;
}

void write_file_atomic(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(getpid()))).string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(path + ": cannot write (" + errno_text(errno) +
                "); check the directory exists and is writable");
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(path + ": write failed (" + errno_text(err) + ")");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": fsync failed (" + errno_text(err) + ")");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": rename failed (" + errno_text(err) + ")");
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

JsonObject::JsonObject(const Json& json, std::string path) : json_(json), path_(std::move(path)) {
  if (!json_.is_object())
    throw Error((path_.empty() ? std::string("document") : path_) + ": must be an object, got " +
                type_name(json_));
}

std::string JsonObject::field(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonObject::fail(const std::string& key, const std::string& reason) const {
  throw Error(field(key) + ": " + reason);
}

bool JsonObject::has(const char* key) const { return json_.contains(key); }

bool JsonObject::optional(const char* key) {
  used_.insert(key);
  return has(key);
}

const Json& JsonObject::get(const char* key) {
  used_.insert(key);
  auto it = json_.find(key);
  if (it == json_.end()) fail(key, "missing (required field)");
  return *it;
}

const Json& JsonObject::raw(const char* key) { return get(key); }

void JsonObject::expect_schema(const std::string& expected) {
  if (!has("schema")) fail("schema", "missing; expected \"" + expected + "\"");
  std::string got = string("schema");
  if (got != expected) {
    std::string hint;
    if (got.rfind("mlpo.", 0) == 0) hint = " (this is an " + got + " file; pass the right file)";
    fail("schema", "expected \"" + expected + "\", got \"" + got + "\"" + hint);
  }
}

std::string JsonObject::string(const char* key) {
  const Json& j = get(key);
  if (!j.is_string()) fail(key, "must be a string, got " + type_name(j));
  return j.get<std::string>();
}

std::string JsonObject::string_or(const char* key, const std::string& fallback) {
  return optional(key) ? string(key) : fallback;
}

std::string JsonObject::choice(const char* key, std::initializer_list<const char*> choices) {
  std::string v = string(key);
  std::string list;
  for (const char* c : choices) {
    if (v == c) return v;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  fail(key, "'" + v + "' is not one of: " + list);
}

std::string JsonObject::choice_or(const char* key, std::initializer_list<const char*> choices,
                                  const std::string& fallback) {
  return optional(key) ? choice(key, choices) : fallback;
}

double JsonObject::number(const char* key, double min, double max) {
  const Json& j = get(key);
  if (!j.is_number()) fail(key, "must be a number, got " + type_name(j));
  double v = j.get<double>();
  if (!std::isfinite(v)) fail(key, "must be finite");
  if (v < min || v > max)
    fail(key, "must be between " + format_number(min) + " and " + format_number(max) + ", got " +
                  format_number(v));
  return v;
}

double JsonObject::number_or(const char* key, double min, double max, double fallback) {
  return optional(key) ? number(key, min, max) : fallback;
}

double JsonObject::positive(const char* key) {
  const Json& j = get(key);
  if (!j.is_number()) fail(key, "must be a number, got " + type_name(j));
  double v = j.get<double>();
  if (!std::isfinite(v) || v <= 0) fail(key, "must be > 0, got " + format_number(v));
  return v;
}

std::int64_t JsonObject::integer(const char* key, std::int64_t min, std::int64_t max) {
  const Json& j = get(key);
  std::int64_t v = 0;
  if (j.is_number_unsigned()) {
    auto u = j.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX))
      fail(key, "is too large (at most " + std::to_string(max) + ")");
    v = static_cast<std::int64_t>(u);
  } else if (j.is_number_integer()) {
    v = j.get<std::int64_t>();
  } else if (j.is_number_float()) {
    double d = j.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) fail(key, "must be an integer, got " + format_number(d));
    if (d < static_cast<double>(min) || d > static_cast<double>(max))
      fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                    format_number(d));
    v = static_cast<std::int64_t>(d);
  } else {
    fail(key, "must be an integer, got " + type_name(j));
  }
  if (v < min || v > max)
    fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                  std::to_string(v));
  return v;
}

std::int64_t JsonObject::integer_or(const char* key, std::int64_t min, std::int64_t max,
                                    std::int64_t fallback) {
  return optional(key) ? integer(key, min, max) : fallback;
}

bool JsonObject::boolean(const char* key) {
  const Json& j = get(key);
  if (!j.is_boolean()) fail(key, "must be true or false, got " + type_name(j));
  return j.get<bool>();
}

bool JsonObject::boolean_or(const char* key, bool fallback) {
  return optional(key) ? boolean(key) : fallback;
}

const Json& JsonObject::array(const char* key) {
  const Json& j = get(key);
  if (!j.is_array()) fail(key, "must be an array, got " + type_name(j));
  return j;
}

JsonObject JsonObject::object(const char* key) { return JsonObject(get(key), field(key)); }

void JsonObject::finish() const {
  for (auto it = json_.begin(); it != json_.end(); ++it) {
    if (!used_.count(it.key())) {
      std::string known;
      for (const auto& k : used_) known += (known.empty() ? "" : ", ") + k;
      throw Error(field(it.key()) + ": unknown field (known fields here: " + known + ")");
    }
  }
}

std::string element_path(const std::string& array_path, std::size_t index) {
  return array_path + "[" + std::to_string(index) + "]";
}

}  // namespace mlpo
