#include "executor/hf/safetensors.hpp"

#include <cstring>
#include <fstream>

#include "core/error.hpp"
#include "core/json_io.hpp"

namespace mlpo::hf {

std::size_t safetensors_dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, std::size_t> bytes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  const auto it = bytes.find(dtype);
  return it == bytes.end() ? 0 : it->second;
}

std::string safetensors_header(const std::vector<SafetensorsEntry>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t at = 0;
  for (const auto& t : tensors) {
    const std::size_t element_bytes = safetensors_dtype_bytes(t.dtype);
    MLPO_CHECK(element_bytes > 0, "safetensors: dtype to write");
    std::uint64_t bytes = element_bytes;
    for (auto d : t.shape) bytes *= static_cast<std::uint64_t>(d);
    header[t.name] = Json{{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += text;
  return out;
}

std::string safetensors_header(const model::ParameterLayout& layout,
                               const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsEntry> tensors;
  for (const auto& e : layout.entries()) tensors.push_back({e.name, "BF16", e.shape});
  return safetensors_header(tensors, metadata);
}

std::string safetensors_bytes(const model::ParameterLayout& layout, std::span<const bf16> weights,
                              const std::map<std::string, std::string>& metadata) {
  MLPO_CHECK(static_cast<std::int64_t>(weights.size()) == layout.total(), "safetensors: weight count");
  std::string out = safetensors_header(layout, metadata);
  const std::size_t data_at = out.size();
  out.resize(data_at + weights.size() * sizeof(bf16));
  // bf16 is stored little-endian, as the host (x86-64) holds it.
  std::memcpy(out.data() + data_at, weights.data(), weights.size() * sizeof(bf16));
  return out;
}

std::vector<SafetensorsTensor> read_safetensors_header(const std::string& path,
                                                       std::map<std::string, std::string>* metadata) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (" + errno_text(errno) + ")");
  in.seekg(0, std::ios::end);
  const auto file_bytes = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char len[8] = {};
  if (!in.read(reinterpret_cast<char*>(len), 8))
    throw Error(path + ": not a safetensors file (shorter than 8 bytes)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > file_bytes - 8 || n > (1u << 30))
    throw Error(path + ": not a safetensors file (header length " + std::to_string(n) + ")");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  Json header = Json::parse(text, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    throw Error(path + ": safetensors header is not a JSON object");
  std::vector<SafetensorsTensor> out;
  const std::uint64_t data_bytes = file_bytes - 8 - n;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") {
      if (metadata)
        for (const auto& [k, v] : t.items()) (*metadata)[k] = v.get<std::string>();
      continue;
    }
    try {
      SafetensorsTensor st{
          name, t.at("dtype").get<std::string>(), t.at("shape").get<std::vector<std::int64_t>>(),
          t.at("data_offsets").at(0).get<std::uint64_t>(), t.at("data_offsets").at(1).get<std::uint64_t>()};
      if (st.end < st.begin) throw Error("data_offsets end before they begin");
      if (st.end > data_bytes)
        throw Error("data_offsets end at byte " + std::to_string(st.end) + " of the data, which holds " +
                    std::to_string(data_bytes) + " bytes: the file is truncated");
      st.begin += 8 + n;
      st.end += 8 + n;
      out.push_back(std::move(st));
    } catch (const std::exception& e) {
      throw Error(path + ": tensor " + name + ": " + e.what());
    }
  }
  return out;
}

}  // namespace mlpo::hf
