#pragma once
// Command-line options of one subcommand. Every bad argument becomes a
// UsageError with one line that names the option (exit status 2).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace manifold::cli {

struct OptionSpec {
  std::string name;         ///< "--metric" or "-k"
  bool takes_value = true;
  std::string alias = {};   ///< e.g. "--k" for "-k"
};

class Args {
 public:
  /// Parses argv[first..argc); unknown options and missing values throw UsageError.
  Args(const std::string& command, std::vector<OptionSpec> specs, int argc, char** argv, int first);

  bool has(const std::string& name) const;
  std::string str(const std::string& name, const std::string& fallback = {}) const;
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
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

/// Options of `knn`/`run`/`bench` mapped onto KnnParams-like fields.
std::vector<OptionSpec> knn_option_specs();

}  // namespace manifold::cli
