#include "cli/args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "manifold/error.h"

namespace manifold::cli {

Args::Args(const std::string& command, std::vector<OptionSpec> specs, int argc, char** argv, int first)
    : command_(command), specs_(std::move(specs)) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.'))) {
      std::string value;
      bool inline_value = false;
      if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inline_value = true;
      }
      auto it = std::find_if(specs_.begin(), specs_.end(),
                             [&](const OptionSpec& s) { return s.name == a || (!s.alias.empty() && s.alias == a); });
      if (it == specs_.end()) throw UsageError(command_ + ": unknown option '" + a + "' (see manifold --help)");
      if (it->takes_value) {
        if (!inline_value) {
          if (i + 1 >= argc) throw UsageError(command_ + ": option " + a + " needs a value");
          value = argv[++i];
        }
      } else if (inline_value) {
        throw UsageError(command_ + ": option " + a + " takes no value");
      } else {
        value = "1";
      }
      values_[it->name] = value;
    } else {
      positionals_.push_back(a);
    }
  }
}

bool Args::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Args::str(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (errno || end == it->second.c_str() || *end)
    throw UsageError(name + ": '" + it->second + "' is not an integer");
  if (v < min || v > max)
    throw UsageError(name + ": " + it->second + " is out of range [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  return v;
}

double Args::real(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end || !std::isfinite(v))
    throw UsageError(name + ": '" + it->second + "' is not a number");
  return v;
}

uint64_t Args::bytes(const std::string& name, uint64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  double mult = 1;
  std::string suffix = end ? end : "";
  if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) throw UsageError(name + ": '" + it->second + "' is not a byte count (e.g. 512M, 4G)");
  if (end == it->second.c_str() || !(v > 0)) throw UsageError(name + ": '" + it->second + "' must be a positive byte count");
  // Converting a double at or above 2^64 to uint64_t is undefined behaviour.
  if (!(v * mult < 18446744073709551616.0))
    throw UsageError(name + ": '" + it->second + "' is more bytes than any machine has");
  return static_cast<uint64_t>(v * mult);
}

std::string Args::one_positional(const std::string& what) const {
  if (positionals_.empty()) throw UsageError(command_ + ": missing " + what);
  if (positionals_.size() > 1) throw UsageError(command_ + ": unexpected argument '" + positionals_[1] + "'");
  return positionals_[0];
}

std::vector<OptionSpec> knn_option_specs() {
  return {{"-k", true, "--k"},     {"--metric"},     {"--backend"},  {"--select"},
          {"--devices"},           {"--gpu-memory"}, {"--keep-self", false},
          {"--threads"},           {"--precision"},  {"--dataset"},  {"-o", true, "--output"},
          {"--overwrite", false},  {"--quiet", false, "-q"}};
}

}  // namespace manifold::cli
