#pragma once
// Byte and time units, and their parsing/printing for CLIs and logs.

#include <cstdint>
#include <string>
#include <string_view>

namespace mlpo {

inline constexpr std::uint64_t KiB = 1024ull;
inline constexpr std::uint64_t MiB = 1024ull * KiB;
inline constexpr std::uint64_t GiB = 1024ull * MiB;
inline constexpr std::uint64_t TiB = 1024ull * GiB;
inline constexpr double GB = 1e9;  // bandwidths are in decimal GB/s, as fio and vendors print them

// Parses "4096", "4K", "4KiB", "1.5G", "2GiB", "3TB" (K/M/G/T are binary multiples;
// "KB"/"MB"/"GB"/"TB" are decimal). Throws mlpo::Error naming `what` on bad text.
std::uint64_t parse_bytes(std::string_view text, std::string_view what);

// Parses a count such as "1000000", "1e9", "500M", "1.5B" (K = 1e3, M = 1e6, B or G = 1e9,
// T = 1e12). Throws mlpo::Error naming `what` on bad text.
std::uint64_t parse_count(std::string_view text, std::string_view what);

// "48.2 GiB", "512 KiB", "17 B".
std::string format_bytes(double bytes);

// "1.23 s", "45.6 ms", "7.8 us".
std::string format_seconds(double seconds);

// Rounds `value` up to a multiple of `align` (align > 0).
constexpr std::uint64_t round_up(std::uint64_t value, std::uint64_t align) {
  return (value + align - 1) / align * align;
}

}  // namespace mlpo
