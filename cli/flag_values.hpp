#pragma once
// The ranges of numeric flags, shared by every MLPO command so each flag states its range once,
// where it is declared: `app.add_option("--lr", lr, "...")->check(cli::positive_real(fp32))`.
// Each is a CLI11 validator that checks the flag's text before CLI11 converts it, so a bad
// value ends the parse: NaN, ±inf, text that is not wholly a number, a value outside the range,
// a negative number for an unsigned flag, an integer that does not fit. The error names the
// flag, the range and the value ("--lr: must be a finite number > 0, got 'nan'"), the command
// prints it as one line and exits 2. The range also shows in --help (`--lr FLOAT:>0`).

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

namespace mlpo::cli {

// Values used as 32-bit floats (AdamW's hyper-parameters) must also lie in the range after
// rounding to float: 1e-50 is > 0 as a double but 0 as a float.
enum class Precision { fp64, fp32 };

// A real number in [min, max], or with an open end (min_open: > min, max_open: < max).
struct RealRange {
  double min = 0;
  double max = std::numeric_limits<double>::max();
  bool min_open = false;
  bool max_open = false;
  Precision precision = Precision::fp64;
};
CLI::Validator real_in(const RealRange& range);

inline CLI::Validator positive_real(Precision p = Precision::fp64) {
  return real_in({0, std::numeric_limits<double>::max(), true, false, p});
}
inline CLI::Validator non_negative_real(Precision p = Precision::fp64) {
  return real_in({0, std::numeric_limits<double>::max(), false, false, p});
}
// [0, 1): AdamW's betas (fp32).
inline CLI::Validator fraction_below_one() { return real_in({0, 1, false, true, Precision::fp32}); }

// A decimal integer in [min, max] (no exponent, no hex, no leading zeros: "010" is not ten).
CLI::Validator whole_in(std::int64_t min, std::int64_t max);
// Any decimal integer in [0, 2^64 - 1] (seeds).
CLI::Validator unsigned_whole();

// A byte size as parse_bytes reads it ("64K", "1.5GiB", "2GB", "4096B") of at least `min`
// bytes and a multiple of `multiple_of` (e.g. 4096 for O_DIRECT block sizes). The unit is
// required: a bare number ("400") is refused rather than read as bytes.
CLI::Validator byte_size(std::uint64_t min = 1, std::uint64_t multiple_of = 1);
// A count as parse_count reads it ("1e9", "500M", "1.5B") of at least `min`.
CLI::Validator count_at_least(std::uint64_t min = 1);

// Declares a flag whose default shows in --help and whose text `check` checks:
// `add_checked(app, "--beta1", beta1, "AdamW beta1", fraction_below_one())`.
template <class T>
CLI::Option* add_checked(CLI::App& app, const std::string& name, T& value, const std::string& help,
                         CLI::Validator check) {
  return app.add_option(name, value, help)->capture_default_str()->check(std::move(check));
}

}  // namespace mlpo::cli
