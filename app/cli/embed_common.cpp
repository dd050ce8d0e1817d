#include "cli/embed_common.h"

#include <cstdio>
#include <cstring>

#include "manifold/embedding_io.h"
#include "manifold/error.h"

namespace manifold::cli {

namespace {

double total_of(const Timings& t) {
  for (auto& [s, v] : t)
    if (s == "total") return v;
  return 0;
}

}  // namespace

std::vector<OptionSpec> diffusion_option_specs(const std::string& k_option) {
  return {{k_option},       {"--epsilon"},   {"--alpha"}, {"--components"}, {"--t"},
          {"--symmetrize"}, {"--local-scaling"}, {"--tolerance"}, {"--ncv"}, {"--no-lock-check", false},
          {"--eigensolver"}, {"--max-matvecs"}, {"--time-limit"}};
}

DiffusionParams diffusion_params_from(const Args& a, const std::string& k_option, DiffusionParams p) {
  p.k = static_cast<int>(a.integer(k_option, p.k, 0, 1 << 20));
  p.epsilon = a.str("--epsilon", p.epsilon);
  p.alpha = a.real("--alpha", p.alpha);
  p.components = static_cast<int>(a.integer("--components", p.components, 1, 1 << 20));
  p.t = a.real("--t", p.t);
  p.symmetrize = a.str("--symmetrize", p.symmetrize);
  if (a.has("--local-scaling")) p.local_scaling = parse_local_scaling(a.str("--local-scaling"));
  p.tolerance = a.real("--tolerance", p.tolerance);
  p.ncv = static_cast<int>(a.integer("--ncv", p.ncv, 0, 1 << 20));
  if (a.has("--no-lock-check")) p.lock_check = false;
  p.max_matvecs = a.integer("--max-matvecs", p.max_matvecs, 0, INT64_MAX);
  p.time_limit_s = a.real("--time-limit", p.time_limit_s);
  p.eigensolver = a.str("--eigensolver", p.eigensolver);
  p.threads = static_cast<int>(a.integer("--threads", p.threads, 0, 4096));
  return p;
}

void report_warnings(const DiffusionResult& r) {
  for (const std::string& w : r.diagnostics.warnings) std::fprintf(stderr, "manifold: warning: %s\n", w.c_str());
}

void print_summary(const DiffusionResult& r, const DiffusionParams& p, const std::string& out) {
  std::printf("diffusion map: N=%lld k=%d epsilon=%.6g (%s) alpha=%g t=%g, %d coordinates in %.3f s -> %s\n",
              static_cast<long long>(r.n), r.k, r.epsilon, epsilon_rule(p).c_str(), p.alpha, p.t, r.m,
              total_of(r.timings), out.c_str());
  std::printf("eigenvalues:");
  for (size_t i = 0; i < r.eigenvalues.size() && i < 11; ++i) std::printf(" %.6f", r.eigenvalues[i]);
  std::printf("%s\n", r.eigenvalues.size() > 11 ? " ..." : "");
  if (!r.bgh.is_null())
    std::printf("epsilon auto (Berry-Giannakis-Harlim): max slope %.3f, intrinsic dimension ~ %.2f\n",
                r.bgh.value("max_slope", 0.0), r.bgh.value("dimension", 0.0));
}

std::vector<std::string> take_metadata_options(const std::string& command, int& argc, char** argv, int first) {
  std::vector<std::string> specs;
  int out = first;
  for (int i = first; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--metadata")) {
      if (i + 1 >= argc) throw UsageError(command + ": option --metadata needs a value (FILE[:COLUMN])");
      specs.push_back(argv[++i]);
    } else if (!std::strncmp(argv[i], "--metadata=", 11)) {
      specs.push_back(argv[i] + 11);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return specs;
}

MetadataTable load_metadata_for(const std::vector<std::string>& specs, int64_t rows, const std::string& data) {
  std::vector<std::string> warnings;
  MetadataTable t = load_metadata(specs, rows, data, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "manifold: warning: %s\n", w.c_str());
  return t;
}

void print_metadata_summary(const DiffusionResult& r, const MetadataTable& metadata) {
  if (metadata.empty()) return;
  std::printf("%s\n", correlation_summary(metadata_correlations(r, metadata)).c_str());
}

}  // namespace manifold::cli
