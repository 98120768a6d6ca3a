// mlpo-profile: measure this machine into an mlpo.profile/1 file (docs/profile.md).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_main.hpp"
#include "cli/flag_values.hpp"
#include "core/diagnostics.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/path_checks.hpp"
#include "core/profile.hpp"
#include "core/units.hpp"
#include "profiles/gpu_probe.hpp"
#include "core/interrupt.hpp"
#include "profiles/profile_runner.hpp"
#include "profiles/summary_table.hpp"

namespace {

constexpr const char* kDescription =
    "mlpo-profile: measure this machine (host memory and CPU Adam throughput, GPUs and PCIe,\n"
    "and the bandwidth of every storage tier at several concurrencies) into a profile that\n"
    "mlpo-tune reads. Without --tier, the current directory is profiled as tier 'scratch'.\n"
    "Every number is checked against the range --help shows (a count of 0 is an error, not the default).";

// What the command line sets: the request itself, and the texts that become parts of it.
struct ProfileFlags {
  mlpo::profiles::ProfileRequest request;
  std::vector<std::string> tier_texts;
  std::string out, compare, tier_size, block_size = "1MiB", host_size, io_settings;
  std::string comm_size = "32MiB", comm_child, between_nodes, show;
  bool json = false;
};

// The flags of what is measured on this node: tiers, model shapes, I/O and host sizes.
void add_measure_flags(CLI::App& app, ProfileFlags& f) {
  mlpo::profiles::ProfileRequest& request = f.request;
  app.add_option(
      "--tier", f.tier_texts,
      "NAME=PATH[:KIND] of a tier directory (repeatable; KIND host|nvme|remote|other, detected when absent)");
  app.add_flag("--quick", request.quick, "Smaller sizes and fewer repetitions (under a minute)");
  app.add_option("--out", f.out,
                 "Profile file to write atomically (default profile.json; with --json only when given)");
  app.add_flag("--json", f.json, "Print the profile as JSON on stdout and nothing else");
  app.add_option("--compare", f.compare, "An earlier profile: print every figure old vs new with the ratio");
  app.add_option(
      "--model", request.model,
      "Model preset or mlpo.model/1 file whose layer GEMMs and (without a GPU) CPU forward/backward "
      "are timed, on three of its layers (default llama2-7b; give the model you will train)");
  app.add_option("--micro-batch", request.micro_batch,
                 "Sequences per micro-batch of the timed shapes (default 1; give the run's: the CPU rate "
                 "grows with it)")
      ->check(mlpo::cli::whole_in(1, 1 << 20));
  app.add_option("--seq-len", request.seq_len,
                 "Tokens per sequence of the timed shapes (default: the model's, capped at 512, --quick 128; "
                 "a value given is taken as it is)")
      ->check(mlpo::cli::whole_in(1, 1 << 24));
  app.add_option(
         "--tier-size", f.tier_size,
         "Bytes each stream writes and reads per tier (default 1GiB, --quick 256MiB; clamped to free space)")
      ->check(mlpo::cli::byte_size());
  app.add_option("--streams", request.max_streams,
                 "Largest stream count of the contention curve (default 8, --quick 4)")
      ->check(mlpo::cli::whole_in(1, 64));
  app.add_option("--block-size", f.block_size, "I/O block size (default 1MiB, as the executor)")
      ->check(mlpo::cli::byte_size(4096, 4096));
  app.add_option("--queue-depth", request.queue_depth,
                 "I/O operations in flight per stream (default 8, as the executor)")
      ->check(mlpo::cli::whole_in(1, 4096));
  app.add_option(
      "--io-settings", f.io_settings,
      "More I/O settings BS:QD[,BS:QD...] (block size, operations in flight per stream, e.g. "
      "256KiB:32,4MiB:4) at which every tier's write, read and read+write curves are measured too, "
      "each about as long as the main ones; mlpo-tune then searches them (default: none)");
  app.add_option("--host-size", f.host_size,
                 "AdamW state and memcpy buffer bytes (default 1GiB, --quick 256MiB)")
      ->check(mlpo::cli::byte_size());
  app.add_option("--reps", request.repetitions, "Timed repetitions per figure (default 5, --quick 3)")
      ->check(mlpo::cli::whole_in(1, 1000));
}

// The flags of the --comm probes, and the ones that do not measure (--notes, --show).
void add_comm_flags(CLI::App& app, ProfileFlags& f) {
  mlpo::profiles::ProfileRequest& request = f.request;
  app.add_flag("--comm", request.comm,
               "Also measure host MPI all-gather / reduce-scatter between ranks (launches mpirun -np "
               "--comm-ranks copies of this program; a few seconds)");
  app.add_option("--comm-ranks", request.comm_options.ranks, "Ranks of the --comm probe (default 2)")
      ->check(mlpo::cli::whole_in(2, 1024));
  app.add_option("--comm-size", f.comm_size, "Full buffer of the --comm probe's collectives (default 32MiB)")
      ->check(mlpo::cli::byte_size());
  app.add_option("--comm-between-nodes", f.between_nodes,
                 "Also measure the collectives between nodes (comm.inter_node): LAUNCHER is the command "
                 "that starts ranks on several nodes, given -np and --map-by (e.g. "
                 "\"scripts/testbed.sh mpirun\", or \"mpirun --hostfile hosts\"; docs/testbed.md)");
  app.add_option("--comm-nodes", request.inter_node_options.ranks,
                 "Nodes of --comm-between-nodes (default 2)")
      ->check(mlpo::cli::whole_in(2, 1024));
  app.add_option("--comm-ranks-per-node", request.inter_node_options.ranks_per_node,
                 "Ranks on each node of --comm-between-nodes (default 1): give the run's ranks per node, "
                 "so the figures include the node's ranks sharing its link")
      ->check(mlpo::cli::whole_in(1, 1024));
  app.add_option("--comm-probe-child", f.comm_child, "Internal: the --comm probe's ranks write FILE")
      ->group("");
  app.add_option("--notes", request.notes,
                 "Free text stored in the profile's notes (e.g. the machine class)");
  app.add_option("--show", f.show,
                 "Print an existing profile's summary (the table a measurement ends with) and exit; "
                 "measures nothing");
}

// --show: print an existing profile's summary; every other flag is an error.
int run_show(const CLI::App& app, const std::string& show) {
  for (const CLI::Option* option : app.get_options())
    if (option->count() > 0 && option->get_name() != "--show")
      throw mlpo::Error(option->get_name() + ": not used by --show, which prints an existing profile; drop " +
                        option->get_name());
  std::fputs(mlpo::profiles::summary_table(mlpo::load_profile(show)).c_str(), stdout);
  return 0;
}

// The --comm probes' settings from their flags (the child's too, so it runs what its parent asked).
void set_comm_options(ProfileFlags& f) {
  mlpo::profiles::ProfileRequest& request = f.request;
  request.comm_options.buffer_bytes =
      static_cast<std::int64_t>(mlpo::parse_bytes(f.comm_size, "--comm-size"));
  if (request.repetitions > 0) request.comm_options.repetitions = request.repetitions;
  std::istringstream words(f.between_nodes);
  for (std::string w; words >> w;) request.inter_node_options.launcher.push_back(w);
  request.inter_node_options.buffer_bytes = request.comm_options.buffer_bytes;
  request.inter_node_options.repetitions = request.comm_options.repetitions;
}

// The rest of the request from its flags; true when no --tier was given and the current directory
// stands in as tier 'scratch'.
bool set_measure_options(ProfileFlags& f) {
  mlpo::profiles::ProfileRequest& request = f.request;
  for (const std::string& text : f.tier_texts) request.tiers.push_back(mlpo::profiles::parse_tier_spec(text));
  const bool default_tier = request.tiers.empty();
  if (default_tier)
    request.tiers.push_back(
        mlpo::profiles::parse_tier_spec("scratch=" + std::filesystem::current_path().string()));
  if (!f.tier_size.empty()) request.tier_bytes_per_stream = mlpo::parse_bytes(f.tier_size, "--tier-size");
  if (!f.host_size.empty()) request.host_bytes = mlpo::parse_bytes(f.host_size, "--host-size");
  request.block_size = mlpo::parse_bytes(f.block_size, "--block-size");
  request.io_settings = mlpo::profiles::parse_io_settings(f.io_settings);
  if (!f.json && f.out.empty()) f.out = "profile.json";
  if (!f.out.empty()) mlpo::check_output_file(f.out, "--out");
  return default_tier;
}

// The notes printed once the input is known to be good, so bad input is one line.
void print_notes(const mlpo::profiles::ProfileRequest& request,
                 const mlpo::profiles::PreparedProfile& prepared, bool default_tier) {
  if (default_tier)
    std::fprintf(stderr,
                 "mlpo-profile: no --tier given: profiling the current directory %s as tier 'scratch' (%s)\n",
                 request.tiers.back().path.c_str(), to_string(request.tiers.back().kind));
  for (const auto& plan : prepared.tiers)
    if (!plan.clamp_note.empty()) std::fprintf(stderr, "mlpo-profile: note: %s\n", plan.clamp_note.c_str());
}

// Writes the profile and prints it (JSON or the summary), then the comparison with an earlier one.
void report_profile(const ProfileFlags& f, const mlpo::Profile& profile, const mlpo::Profile& old_profile) {
  const std::string text = to_json(profile).dump(2) + "\n";
  if (!f.out.empty()) mlpo::write_file_atomic(f.out, text);
  if (f.json) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::fputs(mlpo::profiles::summary_table(profile).c_str(), stdout);
    std::printf("wrote %s\n", f.out.c_str());
  }
  if (!f.compare.empty())
    std::fputs(mlpo::profiles::compare_table(old_profile, profile).c_str(), f.json ? stderr : stdout);
}

// Measures this machine as the flags ask, then writes and prints the profile.
int run_measure(ProfileFlags& f) {
  using namespace mlpo;
  const bool default_tier = set_measure_options(f);
  Profile old_profile;
  if (!f.compare.empty()) old_profile = load_profile(f.compare);

  const profiles::PreparedProfile prepared = profiles::prepare_profile(f.request);
  print_notes(f.request, prepared, default_tier);

  // Progress on stderr unless --json; each distinct warning once, on a line of its own.
  const Diagnostics to_stderr = stderr_diagnostics("mlpo-profile");
  std::set<std::string> warned;
  const Diagnostics diagnostics([&](const Diagnostic& d) {
    if (d.kind == DiagnosticKind::progress && f.json) return;
    if (d.kind == DiagnosticKind::warning) {
      if (!warned.insert(d.text).second) return;
      end_stderr_progress_line();
    }
    to_stderr.report(d);
  });

  Profile profile;
  try {
    InterruptGuard guard;
    profile = profiles::run_profile(prepared, profiles::probe_gpus, diagnostics);
  } catch (const Interrupted& e) {
    end_stderr_progress_line();
    std::fprintf(stderr, "mlpo-profile: %s; probe files removed, no profile written\n", e.what());
    return 128 + e.signal();
  }
  end_stderr_progress_line();
  report_profile(f, profile, old_profile);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "mlpo-profile"};
  mlpo::cli::add_version_flag(app);
  ProfileFlags flags;
  add_measure_flags(app, flags);
  add_comm_flags(app, flags);
  return mlpo::cli::run(app, argc, argv, [&] {
    if (!flags.show.empty()) return run_show(app, flags.show);
    set_comm_options(flags);
    if (!flags.comm_child.empty())
      return mlpo::profiles::run_comm_probe_child(flags.comm_child, flags.request.comm_options);
    return run_measure(flags);
  });
}
