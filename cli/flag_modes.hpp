#pragma once
// Which modes of a command read each of its flags, so a flag that the chosen mode would ignore
// is an error naming the mode ("--data: not used by --update-only (...); it is read by training;
// drop it"), never a silent no-op; and which flags need another one (--checkpoint-every needs
// --checkpoint-dir). A command declares its modes as bits and lists every flag once, with the
// modes that read it — a new flag is one row:
//
//   enum : unsigned { kTraining = 1, kUpdateOnly = 2 };
//   const cli::FlagModes modes({{kTraining, "training"}, {kUpdateOnly, "--update-only"}},
//                              {{"--data", kTraining}, {"--plan", kTraining | kUpdateOnly}, ...});
//   ... parse ...
//   modes.check(app, update_only ? kUpdateOnly : kTraining);  // first thing the body does
//
// A flag of the command missing from the table is an internal error (std::logic_error, exit 1)
// the first time check() runs, so a forgotten row fails every test that uses the command.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace mlpo::cli {

struct CommandMode {
  unsigned bit;      // one bit per mode
  std::string name;  // how the user selects it, as messages name it ("--update-only", "training")
};

struct FlagUse {
  std::string flag;  // as declared: "--data"
  unsigned modes;    // the modes that read it (bits of CommandMode)
};

// `flag`, when given, is read only together with `needed`; `why` says what it is for.
struct FlagNeed {
  std::string flag;
  std::string needed;
  std::string why;
};

class FlagModes {
 public:
  FlagModes(std::vector<CommandMode> modes, std::vector<FlagUse> uses, std::vector<FlagNeed> needs = {});

  // Throws mlpo::Error for the first flag given on `app`'s command line that `mode` does not
  // read, then for the first given flag whose needed flag is missing; std::logic_error for a
  // flag of `app` (other than --help and --version) that the table does not list.
  void check(const CLI::App& app, unsigned mode) const;

 private:
  std::string names_of(unsigned modes) const;

  std::vector<CommandMode> modes_;
  std::vector<FlagUse> uses_;
  std::vector<FlagNeed> needs_;
};

// Whether `flag` (e.g. "--plan") was given on `app`'s command line.
bool given(const CLI::App& app, const std::string& flag);

}  // namespace mlpo::cli
