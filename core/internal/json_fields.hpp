#pragma once
// JsonFields: a JSON format's keys declared once, as a table. Each row is one key of one
// object: its name, its type, its default (none: required) and valid range, what it means,
// and how it reads into and writes from a member of the C++ struct. A format's parser reads an
// object by walking its rows in order (read_fields; the rows call JsonObject's getters, so the
// errors are the ones a hand-written parser gives), its writer writes the object from the same
// rows (write_fields); the type, default, range and doc columns say what docs/formats.md says
// of each key. Rows whose reading needs more than a getter (a check against another
// field, a nested array) are built with custom_field and say so in their own read/write.

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/json_io.hpp"

namespace mlpo {

// Whether a key must be given, and when a writer writes an optional one: always, or only
// when the member holds something (a non-empty string or array), so that files without it
// read back the same.
enum class Presence { required, optional, optional_written_when_set };

template <class S>
struct JsonField {
  std::string key;
  std::string type;          // "int", "number", "bool", "string", "measurement", ...
  std::string default_text;  // "" when the key is required
  std::string range;         // "1..4096"; "" when any value of the type
  std::string doc;           // what the key means
  std::function<void(JsonObject&, S&)> read;
  std::function<void(const S&, Json&)> write;  // may write nothing
};

template <class S>
using JsonFields = std::vector<JsonField<S>>;

// Reads every row's key of `o` into `s`, in the table's order (not finish(): the caller may
// read more keys first).
template <class S>
void read_fields(const JsonFields<S>& fields, JsonObject& o, S& s) {
  for (const JsonField<S>& f : fields) f.read(o, s);
}

// A whole document: its "schema" checked, its rows read, no key left over.
template <class S>
S read_document(const Json& json, const char* schema, const JsonFields<S>& fields) {
  JsonObject root(json, "");
  root.expect_schema(schema);
  S s;
  read_fields(fields, root, s);
  root.finish();
  return s;
}

template <class S>
void write_fields(const JsonFields<S>& fields, const S& s, Json& j) {
  for (const JsonField<S>& f : fields) f.write(s, j);
}

// "min..max"; "min.." when max is the type's largest.
inline std::string range_text(std::int64_t min, std::int64_t max) {
  return std::to_string(min) + ".." + (max == INT64_MAX ? std::string() : std::to_string(max));
}
inline std::string range_text(double min, double max) {
  char text[64];
  std::snprintf(text, sizeof text, "%g..%g", min, max);
  return text;
}

template <class S>
JsonField<S> custom_field(std::string key, std::string type, std::string default_text, std::string doc,
                          std::function<void(JsonObject&, S&)> read,
                          std::function<void(const S&, Json&)> write) {
  return {std::move(key), std::move(type), std::move(default_text), "",
          std::move(doc), std::move(read), std::move(write)};
}

// A key that `get(object, key)` reads into `member` (with its checks) and that is always
// written from it as it is.
template <class S, class V, class Get>
JsonField<S> plain_field(const char* key, V S::*member, std::string type, std::string default_text,
                         std::string range, const char* doc, Get get) {
  return {key,
          std::move(type),
          std::move(default_text),
          std::move(range),
          doc,
          [=](JsonObject& o, S& s) { s.*member = get(o, key); },
          [=](const S& s, Json& j) { j[key] = s.*member; }};
}

// An integer in [min, max]: required, or `fallback` when absent.
template <class S>
JsonField<S> int_field(const char* key, std::int64_t S::*member, std::int64_t min, std::int64_t max,
                       const char* doc) {
  return plain_field(key, member, "int", "", range_text(min, max), doc,
                     [=](JsonObject& o, const char* k) { return o.integer(k, min, max); });
}
template <class S>
JsonField<S> int_field(const char* key, std::int64_t S::*member, std::int64_t min, std::int64_t max,
                       std::int64_t fallback, const char* doc) {
  return plain_field(key, member, "int", std::to_string(fallback), range_text(min, max), doc,
                     [=](JsonObject& o, const char* k) { return o.integer_or(k, min, max, fallback); });
}

// A number in [min, max]: required, or `fallback` when absent.
template <class S>
JsonField<S> number_field(const char* key, double S::*member, double min, double max, const char* doc) {
  return plain_field(key, member, "number", "", range_text(min, max), doc,
                     [=](JsonObject& o, const char* k) { return o.number(k, min, max); });
}
template <class S>
JsonField<S> number_field(const char* key, double S::*member, double min, double max, double fallback,
                          const char* doc) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", fallback);
  return plain_field(key, member, "number", text, range_text(min, max), doc,
                     [=](JsonObject& o, const char* k) { return o.number_or(k, min, max, fallback); });
}

// A boolean, `fallback` when absent.
template <class S>
JsonField<S> bool_field(const char* key, bool S::*member, bool fallback, const char* doc) {
  return plain_field(key, member, "bool", fallback ? "true" : "false", "", doc,
                     [=](JsonObject& o, const char* k) { return o.boolean_or(k, fallback); });
}

// A string: required, or "" when absent; written as `presence` says.
template <class S>
JsonField<S> string_field(const char* key, std::string S::*member, Presence presence, const char* doc) {
  const bool required = presence == Presence::required;
  return {key,
          "string",
          required ? "" : "\"\"",
          "",
          doc,
          [=](JsonObject& o, S& s) { s.*member = required ? o.string(key) : o.string_or(key, ""); },
          [=](const S& s, Json& j) {
            if (presence != Presence::optional_written_when_set || !(s.*member).empty()) j[key] = s.*member;
          }};
}

// A required string naming a value that `parse(text, field path)` gives (a tier's kind) and
// `name` names; always written.
template <class S, class V>
JsonField<S> parsed_field(const char* key, V S::*member, V (*parse)(const std::string&, const std::string&),
                          const char* (*name)(V), std::string type, const char* doc) {
  return {key,
          std::move(type),
          "",
          "",
          doc,
          [=](JsonObject& o, S& s) { s.*member = parse(o.string(key), o.field(key)); },
          [=](const S& s, Json& j) { j[key] = name(s.*member); }};
}

// An optional choice among the names of an enum's values, `fallback` when absent; always
// written. `names` pairs each value with its name, in the order the error lists them.
template <class S, class E>
JsonField<S> choice_field(const char* key, E S::*member, std::vector<std::pair<const char*, E>> names,
                          E fallback, const char* doc) {
  std::string type, fallback_name;
  for (const auto& [name, value] : names) {
    type += (type.empty() ? "" : " | ") + std::string(name);
    if (value == fallback) fallback_name = name;
  }
  auto read = [=](JsonObject& o, S& s) {
    s.*member = fallback;
    if (!o.optional(key)) return;
    const std::string text = o.string(key);
    std::string list;
    for (const auto& [name, value] : names) {
      if (text == name) {
        s.*member = value;
        return;
      }
      list += (list.empty() ? "" : ", ") + std::string(name);
    }
    o.fail(key, "'" + text + "' is not one of: " + list);
  };
  auto write = [=](const S& s, Json& j) {
    for (const auto& [name, value] : names)
      if (value == s.*member) j[key] = name;
  };
  return {key, type, fallback_name, "", doc, read, write};
}

// A required object whose keys fill the member `member` by the table `fields`; always written.
template <class S, class M>
JsonField<S> object_field(const char* key, M S::*member, JsonFields<M> fields, const char* doc) {
  auto read = [=](JsonObject& o, S& s) {
    JsonObject sub = o.object(key);
    read_fields(fields, sub, s.*member);
    sub.finish();
  };
  auto write = [=](const S& s, Json& j) {
    Json sub = Json::object();
    write_fields(fields, s.*member, sub);
    j[key] = sub;
  };
  return {key, "object", "", "", doc, read, write};
}

// An object whose keys fill fields of `S` itself (a plan's "io": its block size, queue depth,
// ...); required or not, always written. An optional one absent leaves the members as they are.
template <class S>
JsonField<S> group_field(const char* key, bool required, JsonFields<S> fields, const char* doc) {
  auto read = [=](JsonObject& o, S& s) {
    if (!required && !o.optional(key)) return;
    JsonObject sub = o.object(key);
    read_fields(fields, sub, s);
    sub.finish();
  };
  auto write = [=](const S& s, Json& j) {
    Json sub = Json::object();
    write_fields(fields, s, sub);
    j[key] = sub;
  };
  return {key, "object", required ? "" : "the keys' defaults", "", doc, read, write};
}

// An array of objects, each filled by the table `fields`, present and written as `presence` says.
template <class S, class E>
JsonField<S> array_field(const char* key, std::vector<E> S::*member, Presence presence, JsonFields<E> fields,
                         const char* doc) {
  const bool required = presence == Presence::required;
  auto read = [=](JsonObject& o, S& s) {
    if (!required && !o.optional(key)) return;
    const Json& arr = o.array(key);
    for (std::size_t i = 0; i < arr.size(); ++i) {
      JsonObject element(arr[i], element_path(o.field(key), i));
      E e;
      read_fields(fields, element, e);
      element.finish();
      (s.*member).push_back(std::move(e));
    }
  };
  auto write = [=](const S& s, Json& j) {
    if (presence == Presence::optional_written_when_set && (s.*member).empty()) return;
    Json arr = Json::array();
    for (const E& e : s.*member) {
      Json ej = Json::object();
      write_fields(fields, e, ej);
      arr.push_back(ej);
    }
    j[key] = arr;
  };
  return {key, "array", required ? "" : "[]", "", doc, read, write};
}

}  // namespace mlpo
