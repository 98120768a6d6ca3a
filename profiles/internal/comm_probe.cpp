#include "profiles/internal/comm_probe.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "executor/comm/launch_env.hpp"
#include "executor/comm/open_communicator.hpp"
#include "profiles/internal/sample_stats.hpp"

namespace mlpo::profiles {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Seconds of the slowest rank for each of `reps` calls of `collective`, each after a barrier.
template <class F>
std::vector<double> timed(comm::Communicator& comm, int reps, F&& collective) {
  std::vector<double> samples;
  for (int i = 0; i < reps; ++i) {
    comm.barrier();
    const auto t0 = Clock::now();
    collective();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    comm.all_reduce_max(std::span<double>(&s, 1));
    samples.push_back(s);
  }
  return samples;
}

// Bus GB/s of each sample moving `bytes` of full buffer, less the latency (a sample the
// latency would take 90 % of keeps its whole time: noise, not a bandwidth).
Measurement bus_gbps(const std::vector<double>& seconds, double bytes, double ranks, double latency_s) {
  std::vector<double> gbps;
  for (double s : seconds) {
    const double moving_s = s - latency_s > 0.1 * s ? s - latency_s : s;
    gbps.push_back(bytes * (ranks - 1) / ranks / moving_s / 1e9);
  }
  return summarize(gbps, static_cast<std::int64_t>(bytes));
}

// Per-collective time at message sizes: the intercept of the least-squares line through
// (bus bytes, median seconds) of each size (the slope is 1 / bandwidth).
double fitted_latency_s(const std::vector<double>& bus_bytes, const std::vector<double>& seconds) {
  const double n = static_cast<double>(bus_bytes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < bus_bytes.size(); ++i) {
    sx += bus_bytes[i];
    sy += seconds[i];
    sxx += bus_bytes[i] * bus_bytes[i];
    sxy += bus_bytes[i] * seconds[i];
  }
  const double slope = (n * sxy - sx * sy) / std::max(n * sxx - sx * sx, 1e-30);
  return slope > 0 ? (sy - slope * sx) / n : 0.0;
}

// One collective over full buffers of buffer_bytes/16, /4 and /1 (`call(mine, all)`, each
// rank's piece and the full buffer): the latency its line gives, the largest size's samples.
struct Sweep {
  double latency_s = 0;
  std::vector<double> largest;
  double largest_bytes = 0;
};

template <class T, class Call>
Sweep sweep(comm::Communicator& comm, const CommProbeOptions& o, Call&& call) {
  const auto W = static_cast<std::size_t>(comm.size());
  Sweep out;
  std::vector<double> bus_bytes, medians;
  for (std::int64_t divisor : {16, 4, 1}) {
    const std::size_t piece =
        std::max<std::size_t>(1, static_cast<std::size_t>(o.buffer_bytes / divisor) / sizeof(T) / W);
    std::vector<T> mine(piece, T{}), all(piece * W, T{});
    call(mine, all);  // warm-up: pages and connections
    std::vector<double> samples = timed(comm, o.repetitions, [&] { call(mine, all); });
    out.largest_bytes = static_cast<double>(all.size() * sizeof(T));
    bus_bytes.push_back(out.largest_bytes * static_cast<double>(W - 1) / static_cast<double>(W));
    medians.push_back(summarize(samples, 0).median);
    out.largest = std::move(samples);
  }
  out.latency_s = fitted_latency_s(bus_bytes, medians);
  return out;
}

CollectiveRates measure(comm::Communicator& comm, const CommProbeOptions& o) {
  const auto W = static_cast<std::size_t>(comm.size());
  CollectiveRates c;
  c.measured = true;
  c.ranks = comm.size();
  // The smallest collective: one element per rank (the first calls set up connections).
  std::vector<bf16> one(1), all_one(W);
  timed(comm, 5, [&] { comm.all_gather<bf16>(one, all_one); });
  const std::vector<double> small =
      timed(comm, 4 * o.repetitions, [&] { comm.all_gather<bf16>(one, all_one); });

  const Sweep gather = sweep<bf16>(
      comm, o, [&](std::vector<bf16>& mine, std::vector<bf16>& all) { comm.all_gather<bf16>(mine, all); });
  const Sweep scatter = sweep<float>(comm, o, [&](std::vector<float>& mine, std::vector<float>& all) {
    comm.reduce_scatter_sum<float>(all, mine);
  });
  // Latency: what a collective costs beyond its bytes at these sizes (the smaller of the
  // lines' intercepts: one figure serves both), never below the smallest collective's time.
  const double small_s = summarize(small, 0).median;
  const double latency_s = std::max(small_s, std::min(gather.latency_s, scatter.latency_s));
  std::vector<double> latency_us = small;
  for (double& s : latency_us) s = s * 1e6 * latency_s / small_s;  // the spread of the small calls
  c.latency_us = summarize(latency_us, static_cast<std::int64_t>(W * sizeof(bf16)));
  c.all_gather_gbps = bus_gbps(gather.largest, gather.largest_bytes, static_cast<double>(W), latency_s);
  c.reduce_scatter_gbps = bus_gbps(scatter.largest, scatter.largest_bytes, static_cast<double>(W), latency_s);
  return c;
}

std::string find_in_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

std::string last_line_of(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// Runs argv with stdout and stderr to `log`; the exit status, or -1 after `timeout_s` (killed).
int run_with_timeout(const std::vector<std::string>& argv, const fs::path& log, double timeout_s) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so a timeout ends mpirun and its ranks together
    if (std::FILE* f = std::freopen(log.c_str(), "w", stdout)) ::dup2(::fileno(f), 2);
    ::execvp(args[0], args.data());  // a launcher given as a bare name ("bash ...") is looked up in PATH
    const int err = errno;
    write_stderr_line("cannot run " + std::string(args[0]) + ": " + errno_text(err));
    ::_exit(127);
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    if (Clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int run_comm_probe_child(const std::string& out, const CommProbeOptions& options) {
  auto comm = comm::open_communicator(comm::launch_env(), comm::CommBackend::mpi);
  return comm::run_ranked(*comm, [&] {
    if (comm->size() < 2) throw Error("--comm-probe-child: needs at least 2 ranks (launch it under mpirun)");
    const CollectiveRates c = measure(*comm, options);
    if (comm->rank() == 0) write_file_atomic(out, to_json(c).dump(2) + "\n");
    comm->barrier();
    return 0;
  });
}

namespace {

// Launches the child mode as `launcher` (or mpirun) says and reads its figures back; `what`
// names the figures in warnings ("comm.host_mpi", "comm.inter_node").
CollectiveRates launch_probe(const CommProbeOptions& o, const std::vector<std::string>& launcher,
                             const std::string& what, const Diagnostics& diagnostics) {
  const fs::path dir = fs::temp_directory_path() / ("mlpo-comm-probe-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "rates.json", log = dir / "mpirun.log";
  std::vector<std::string> argv = launcher;
  argv.push_back("-np");
  argv.push_back(std::to_string(o.ranks));
  argv.push_back(o.program.empty() ? fs::read_symlink("/proc/self/exe").string() : o.program);
  for (const std::string& a :
       {std::string("--comm-probe-child"), out.string(), std::string("--comm-size"),
        std::to_string(o.buffer_bytes) + "B", std::string("--reps"), std::to_string(o.repetitions)})
    argv.push_back(a);
  const int status = run_with_timeout(argv, log, o.timeout_s);
  CollectiveRates c;
  if (status == 0 && fs::exists(out)) {
    c = collective_rates_from_json(read_json_file(out.string(), "comm probe figures"), what);
  } else {
    diagnostics.warning(
        "--comm",
        "--comm: " +
            std::string(status < 0
                            ? argv.front() + " took longer than " + std::to_string(int(o.timeout_s)) + " s"
                            : argv.front() + " exited with status " + std::to_string(status)) +
            " (" + last_line_of(log) + "): " + what + " not measured (left out)");
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return c;
}

}  // namespace

CollectiveRates probe_host_mpi(const CommProbeOptions& o, const Diagnostics& diagnostics) {
  const std::string mpirun = find_in_path("mpirun");
  if (mpirun.empty()) {
    diagnostics.warning(
        "--comm", "--comm: no mpirun in PATH: host MPI collectives not measured (comm.host_mpi left out)");
    return {};
  }
  if (!comm::have_mpi()) {
    diagnostics.warning("--comm",
                        "--comm: this build has no MPI (-DMLPO_MPI=OFF): host MPI collectives not measured");
    return {};
  }
  diagnostics.progress("comm",
                       "comm: host MPI all-gather / reduce-scatter, " + std::to_string(o.ranks) + " ranks");
  std::vector<std::string> launcher{mpirun};
  if (::geteuid() == 0) launcher.push_back("--allow-run-as-root");
  for (const char* a : {"--oversubscribe", "--bind-to", "none"}) launcher.push_back(a);
  return launch_probe(o, launcher, "comm.host_mpi", diagnostics);
}

CollectiveRates probe_inter_node(const CommProbeOptions& o, const Diagnostics& diagnostics) {
  MLPO_CHECK(!o.launcher.empty(), "probe_inter_node without a launcher");
  if (!comm::have_mpi()) {
    diagnostics.warning(
        "--comm-between-nodes",
        "--comm-between-nodes: this build has no MPI (-DMLPO_MPI=OFF): comm.inter_node not measured");
    return {};
  }
  const int per_node = std::max(1, o.ranks_per_node);
  diagnostics.progress("comm", "comm: MPI all-gather / reduce-scatter between nodes, " +
                                   std::to_string(o.ranks) + " nodes x " + std::to_string(per_node) +
                                   " rank(s), launched by " + o.launcher.front());
  std::vector<std::string> launcher = o.launcher;
  launcher.push_back("--map-by");
  launcher.push_back(per_node == 1 ? "node" : "ppr:" + std::to_string(per_node) + ":node");
  launcher.push_back("--bind-to");
  launcher.push_back("none");
  CommProbeOptions all = o;
  all.ranks = o.ranks * per_node;
  return launch_probe(all, launcher, "comm.inter_node", diagnostics);
}

}  // namespace mlpo::profiles
