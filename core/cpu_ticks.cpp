#include "core/cpu_ticks.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace mlpo {

std::optional<CpuTicks> parse_cpu_ticks(std::string_view proc_stat) {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is
  // already in user and nice, so the first eight fields are all of it.
  std::size_t at = 0;
  while (at < proc_stat.size() && proc_stat.substr(at, 4) != "cpu ") {
    const std::size_t eol = proc_stat.find('\n', at);
    if (eol == std::string_view::npos) return std::nullopt;
    at = eol + 1;
  }
  if (at >= proc_stat.size()) return std::nullopt;
  const std::size_t eol = proc_stat.find('\n', at);
  std::istringstream fields(
      std::string(proc_stat.substr(at + 4, eol == std::string_view::npos ? eol : eol - at - 4)));
  CpuTicks ticks;
  for (int i = 0; i < 8; ++i) {
    std::int64_t v = 0;
    if (!(fields >> v) || v < 0) return std::nullopt;
    ticks.total += v;
    if (i == 3 || i == 4) ticks.idle += v;
    if (i == 7) ticks.steal = v;
  }
  return ticks;
}

std::optional<CpuTicks> read_cpu_ticks() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  return parse_cpu_ticks(line);
}

namespace {

// The share of all ticks from `before` to `after` that went to `field`.
std::optional<double> share_of(const std::optional<CpuTicks>& before, const std::optional<CpuTicks>& after,
                               std::int64_t CpuTicks::*field) {
  if (!before || !after || after->total <= before->total || (*after).*field < (*before).*field)
    return std::nullopt;
  return static_cast<double>((*after).*field - (*before).*field) /
         static_cast<double>(after->total - before->total);
}

}  // namespace

std::optional<double> steal_share(const std::optional<CpuTicks>& before,
                                  const std::optional<CpuTicks>& after) {
  return share_of(before, after, &CpuTicks::steal);
}

std::optional<double> idle_share(const std::optional<CpuTicks>& before,
                                 const std::optional<CpuTicks>& after) {
  return share_of(before, after, &CpuTicks::idle);
}

}  // namespace mlpo
