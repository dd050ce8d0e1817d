#include "cli/args.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "manifold/error.h"

namespace manifold::cli {

namespace {

/// "-o,--output" -> {"-o", "--output"}.
std::pair<std::string, std::string> split_names(const std::string& names) {
  const size_t comma = names.find(',');
  if (comma == std::string::npos) return {names, ""};
  return {names.substr(0, comma), names.substr(comma + 1)};
}

/// The option a CLI11 message starts with ("--k: 1 required K missing").
std::string option_named_in(const std::string& message) {
  const size_t colon = message.find(':');
  return colon == std::string::npos ? std::string() : message.substr(0, colon);
}

/// Looks like an option, not a negative number ("-3", "-.5" are values).
bool looks_like_option(const std::string& a) {
  return a.size() > 1 && a[0] == '-' && !std::isdigit(static_cast<unsigned char>(a[1])) && a[1] != '.';
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

OptionSpec value(const std::string& names, const std::string& value_name, const std::string& help,
                 const std::string& default_text) {
  const auto [name, alias] = split_names(names);
  return {name, true, alias, value_name, help, default_text};
}

OptionSpec flag(const std::string& names, const std::string& help) {
  const auto [name, alias] = split_names(names);
  return {name, false, alias, "", help};
}

OptionSpec repeated(const std::string& names, const std::string& value_name, const std::string& help) {
  OptionSpec s = value(names, value_name, help);
  s.repeatable = true;
  return s;
}

std::string nearest_name(const std::string& typed, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& k : known) {
    const size_t d = edit_distance(typed, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  // A typo changes a letter or two; a third only in a long name.
  const size_t allowed = typed.size() >= 9 ? 3 : 2;
  return best_distance <= allowed && best_distance < typed.size() ? best : std::string();
}

Args::Args(const std::string& command, const std::string& summary, std::vector<OptionSpec> specs, int argc, char** argv,
           int first, std::vector<PositionalSpec> positionals)
    : command_(command), specs_(std::move(specs)), values_(specs_.size()) {
  CLI::App app(summary, "manifold " + command);
  // Unknown options are collected and named here (with a suggestion), not by CLI11.
  app.allow_extras(true);
  app.get_formatter()->column_width(30);
  std::vector<CLI::Option*> options;
  for (const OptionSpec& s : specs_) {
    const std::string names = s.alias.empty() ? s.name : s.name + "," + s.alias;
    std::string help = s.help;
    if (!s.default_text.empty()) help += " (default: " + s.default_text + ")";
    CLI::Option* o = s.takes_value ? app.add_option(names)->description(help)->type_name(s.value_name)
                                   : app.add_flag(names)->description(help);
    // Given twice, the last value counts (as it did before CLI11), unless every one is kept.
    o->multi_option_policy(s.repeatable ? CLI::MultiOptionPolicy::TakeAll : CLI::MultiOptionPolicy::TakeLast);
    options.push_back(o);
  }
  // The positionals --help names; further words stay among the extras and
  // the command says what it makes of them (one_positional()).
  std::vector<std::string> words(positionals.size());
  for (size_t i = 0; i < positionals.size(); ++i)
    app.add_option(positionals[i].name, words[i], positionals[i].help)->type_name("");
  std::vector<std::string> args(argv + first, argv + argc);
  std::reverse(args.begin(), args.end());  // CLI11 reads the vector from its end
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    throw HelpPrinted{};
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string named = option_named_in(e.what());
    const auto it = std::find_if(specs_.begin(), specs_.end(),
                                 [&](const OptionSpec& s) { return s.name == named || s.alias == named; });
    if (it == specs_.end()) throw UsageError(command_ + ": " + e.what());
    throw UsageError(command_ + ": option " + it->name + " needs a value" +
                     (it->value_name.empty() ? "" : " (" + it->value_name + ")"));
  } catch (const CLI::ParseError& e) {
    throw UsageError(command_ + ": " + e.what());
  }
  for (const std::string& extra : app.remaining()) {
    if (!looks_like_option(extra)) continue;
    const std::string typed = extra.rfind("--", 0) == 0 ? extra.substr(0, extra.find('=')) : extra;
    std::vector<std::string> known;
    for (const OptionSpec& s : specs_) {
      known.push_back(s.name);
      if (!s.alias.empty()) known.push_back(s.alias);
    }
    const std::string near = nearest_name(typed, known);
    throw UsageError(command_ + ": unknown option '" + typed + "' (" +
                     (near.empty() ? "" : "did you mean " + near + "? ") + "see manifold " + command_ + " --help)");
  }
  for (size_t i = 0; i < specs_.size(); ++i)
    if (options[i]->count() > 0)
      values_[i] = specs_[i].takes_value ? options[i]->results() : std::vector<std::string>{"1"};
  for (size_t i = 0; i < positionals.size(); ++i)
    if (app.get_option(positionals[i].name)->count() > 0) positionals_.push_back(words[i]);
  for (const std::string& extra : app.remaining())
    if (!looks_like_option(extra)) positionals_.push_back(extra);
}

const std::vector<std::string>& Args::values(const std::string& name) const {
  static const std::vector<std::string> none;
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].name == name) return values_[i];
  return none;  // an option this command does not have is never given
}

bool Args::has(const std::string& name) const { return !values(name).empty(); }

std::string Args::str(const std::string& name, const std::string& fallback) const {
  const std::vector<std::string>& v = values(name);
  return v.empty() ? fallback : v.back();
}

int64_t Args::integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  if (!has(name)) return fallback;
  const std::string text = str(name);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || end == text.c_str() || *end) throw UsageError(name + ": '" + text + "' is not an integer");
  if (v < min || v > max)
    throw UsageError(name + ": " + text + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) +
                     "]");
  return v;
}

double Args::real(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string text = str(name);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end || !std::isfinite(v)) throw UsageError(name + ": '" + text + "' is not a number");
  return v;
}

uint64_t Args::bytes(const std::string& name, uint64_t fallback) const {
  if (!has(name)) return fallback;
  const std::string text = str(name);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  double mult = 1;
  std::string suffix = end ? end : "";
  if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty())
    throw UsageError(name + ": '" + text + "' is not a byte count (e.g. 512M, 4G)");
  if (end == text.c_str() || !(v > 0)) throw UsageError(name + ": '" + text + "' must be a positive byte count");
  // Converting a double at or above 2^64 to uint64_t is undefined behaviour.
  if (!(v * mult < 18446744073709551616.0))
    throw UsageError(name + ": '" + text + "' is more bytes than any machine has");
  return static_cast<uint64_t>(v * mult);
}

std::string Args::one_positional(const std::string& what) const {
  if (positionals_.empty()) throw UsageError(command_ + ": missing " + what);
  if (positionals_.size() > 1) throw UsageError(command_ + ": unexpected argument '" + positionals_[1] + "'");
  return positionals_[0];
}

std::vector<OptionSpec> knn_option_specs() {
  return {value("-k,--k", "K", "neighbours per point"),
          value("--metric", "METRIC", "euclidean, cosine or pearson", "euclidean"),
          value("--backend", "BACKEND", "auto, cpu, gpu or mpi (auto: the GPU when there is one)", "auto"),
          value("--select", "STRATEGY", "the GPU's selection: auto, warp, quick, sort, heap, merge or bitonic", "auto"),
          value("--devices", "LIST", "the GPUs to use: all, or a list such as 0,1", "all"),
          value("--gpu-memory", "BYTES", "device memory to use per GPU, such as 512M or 4G (default: what is free)"),
          flag("--keep-self", "keep each point as its own first neighbour"),
          value("--threads", "T", "CPU threads (default: 0, every core)"),
          value("--precision", "PRECISION",
                "exact, or fast-exact (the GPU: lower-precision distances, then exact "
                "ranking and distances)",
                "exact"),
          value("--dataset", "PATH", "the dataset inside an HDF5/CXI file, or the array of an .npz"),
          value("-o,--output", "OUTDIR", "the folder to write (written whole or not at all)"),
          flag("--overwrite", "replace what the output folder holds"),
          flag("--quiet,-q", "no progress and no summary")};
}

}  // namespace manifold::cli
