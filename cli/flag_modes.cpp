#include "cli/flag_modes.hpp"

#include <stdexcept>

#include "core/error.hpp"

namespace mlpo::cli {

FlagModes::FlagModes(std::vector<CommandMode> modes, std::vector<FlagUse> uses, std::vector<FlagNeed> needs)
    : modes_(std::move(modes)), uses_(std::move(uses)), needs_(std::move(needs)) {}

std::string FlagModes::names_of(unsigned modes) const {
  std::string names;
  for (const CommandMode& m : modes_)
    if (modes & m.bit) names += (names.empty() ? "" : " and ") + m.name;
  return names;
}

void FlagModes::check(const CLI::App& app, unsigned mode) const {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt == app.get_help_ptr() || opt == app.get_help_all_ptr() || opt == app.get_version_ptr()) continue;
    const std::string flag = opt->get_name();
    const FlagUse* use = nullptr;
    for (const FlagUse& u : uses_)
      if (u.flag == flag) use = &u;
    if (!use)
      throw std::logic_error(app.get_name() + ": " + flag +
                             " is missing from the command's table of flag modes");
    if (opt->count() == 0 || (use->modes & mode)) continue;
    const std::string readers = names_of(use->modes);
    throw Error(flag + ": not used by " + names_of(mode) +
                (readers.empty() ? std::string()
                                 : "; only " + readers + " read" +
                                       (readers.find(" and ") == std::string::npos ? "s" : "") + " it") +
                "; drop " + flag);
  }
  for (const FlagNeed& n : needs_)
    if (given(app, n.flag) && !given(app, n.needed))
      throw Error(n.flag + ": needs " + n.needed + " (" + n.why + "); add " + n.needed + " or drop " +
                  n.flag);
}

bool given(const CLI::App& app, const std::string& flag) {
  const CLI::Option* opt = app.get_option_no_throw(flag);
  return opt && opt->count() > 0;
}

}  // namespace mlpo::cli
