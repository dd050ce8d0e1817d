#pragma once
// Command-line options of one subcommand, read by CLI11. Every bad argument
// becomes a UsageError with one line that names the option (exit status 2);
// --help prints the options with what each does and its default (exit 0).
#include <cstdint>
#include <string>
#include <vector>

namespace manifold::cli {

struct OptionSpec {
  std::string name;  ///< "--metric" or "-k"
  bool takes_value = true;
  std::string alias = {};         ///< e.g. "--k" for "-k"
  std::string value_name = {};    ///< what the value is, in --help: "K", "FILE"
  std::string help = {};          ///< what the option does, one line
  std::string default_text = {};  ///< the default, in --help; "" = none shown
  bool repeatable = false;        ///< every occurrence kept (values())
};

/// An option with a value: `names` is "--metric" or "-o,--output" (the first
/// is the name messages use).
OptionSpec value(const std::string& names, const std::string& value_name, const std::string& help,
                 const std::string& default_text = {});
/// An option without a value.
OptionSpec flag(const std::string& names, const std::string& help);
/// An option with a value that may be given several times.
OptionSpec repeated(const std::string& names, const std::string& value_name, const std::string& help);

/// A positional argument, as --help lists it.
struct PositionalSpec {
  std::string name;  ///< "DATA"
  std::string help;
};

/// Thrown after --help printed the options; main() exits with status 0.
struct HelpPrinted {};

class Args {
 public:
  /// Parses argv[first..argc) for `manifold COMMAND`: unknown options (with
  /// the nearest known name as a suggestion) and missing values throw
  /// UsageError; --help prints `summary` and the options, then throws HelpPrinted.
  Args(const std::string& command, const std::string& summary, std::vector<OptionSpec> specs, int argc, char** argv,
       int first, std::vector<PositionalSpec> positionals = {});

  bool has(const std::string& name) const;
  std::string str(const std::string& name, const std::string& fallback = {}) const;
  /// Every value of a repeatable option, in order.
  const std::vector<std::string>& values(const std::string& name) const;
  int64_t integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  double real(const std::string& name, double fallback) const;
  uint64_t bytes(const std::string& name, uint64_t fallback) const;  ///< accepts 512M, 4G, ...
  const std::vector<std::string>& positionals() const { return positionals_; }
  /// The single positional argument `what`; UsageError if missing or extra.
  std::string one_positional(const std::string& what) const;
  std::string command() const { return command_; }

 private:
  std::string command_;
  std::vector<OptionSpec> specs_;
  std::vector<std::vector<std::string>> values_;  ///< per spec, the values given (flags: "1")
  std::vector<std::string> positionals_;
};

/// The known name nearest to `typed` (edit distance) when it is close enough
/// to be a typo, else "".
std::string nearest_name(const std::string& typed, const std::vector<std::string>& known);

/// Options of `knn`/`run`/`bench`/`submit` mapped onto KnnParams fields.
std::vector<OptionSpec> knn_option_specs();

}  // namespace manifold::cli
