#include "cli/embed_common.h"

#include <algorithm>
#include <cstdio>

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
  return {value(k_option, "K'", "neighbours per point the kernel uses, at most the graph's k (0: all)", "0"),
          value("--epsilon", "auto|median|VALUE",
                "the kernel's scale: the median of the scaled K'-th distances, auto (Berry-Giannakis-Harlim) "
                "or a positive number",
                "median"),
          value("--alpha", "A",
                "alpha-normalisation in [0, 1]: 0 graph Laplacian, 0.5 Fokker-Planck, "
                "1 Laplace-Beltrami",
                "1"),
          value("--components", "M", "diffusion coordinates to compute (at most N - 2 by default)", "10"),
          value("--t", "T", "diffusion time, >= 0", "1"),
          value("--symmetrize", "or|and|average",
                "an edge where either, both or (weighted) one of the two "
                "points lists the other",
                "or"),
          value("--local-scaling", "auto|0|J",
                "sigma_i = the distance to the J-th neighbour; auto: J = min(7, K'), "
                "past duplicates to the nearest distinct neighbour; 0: off",
                "auto"),
          value("--tolerance", "TOL", "eigensolver: relative residual per eigenvalue", "1e-10"),
          value("--ncv", "NCV", "Lanczos basis size (0: chosen from M)", "0"),
          flag("--no-lock-check", "skip the search for eigenvalues missed because they repeat"),
          value("--eigensolver", "auto|cpu|gpu",
                "where the eigensolve runs (auto: the GPU for large graphs when "
                "there is one)",
                "auto"),
          value("--max-matvecs", "N", "eigensolve budget: products with the matrix", "20000"),
          value("--time-limit", "SECONDS", "eigensolve budget in seconds (0: none)", "0"),
          repeated("--metadata", "FILE[:COLUMN]",
                   "per-point columns to correlate with the coordinates and write "
                   "beside them; repeatable (see manifold --help)")};
}

DiffusionParams diffusion_params_from(const Args& a, const std::string& k_option, DiffusionParams p) {
  p.k = static_cast<int>(a.integer(k_option, p.k, 0, 1 << 20));
  // Where the command names the graph's k too (run: -k, the kernel's K' is
  // --embed-k), K' is checked here, by the name the user gave: the later
  // check against the graph names embed's --k.
  if (k_option != "--k" && a.has(k_option) && a.has("-k")) {
    const int64_t graph_k = a.integer("-k", 0, 1, 1 << 20);
    if (p.k > graph_k)
      throw UsageError(k_option + " " + std::to_string(p.k) +
                       ": must be between 0 (all of the graph's neighbours) and the graph's k = " +
                       std::to_string(graph_k) + " (-k)");
  }
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

int default_components_for(int default_components, int64_t n) {
  return static_cast<int>(std::clamp<int64_t>(n - 2, 1, default_components));
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
