// manifold bench embed: times the diffusion-map eigensolve (CPU, and the
// device's when there is one) and re-embedding after a new k' or epsilon, on
// a generated manifold, and writes JSON.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "cli/commands.h"
#include "manifold/dataset.h"
#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/terminal_progress.h"

namespace fs = std::filesystem;

namespace manifold::cli {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Points on a noisy 2-D manifold in 3-D (never degenerate, never all zero).
Dataset manifold_points(const std::string& kind, int64_t n, double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, noise);
  std::vector<float> v(static_cast<size_t>(n * 3));
  for (int64_t i = 0; i < n; ++i) {
    double x, y, z;
    if (kind == "swiss-roll") {
      const double t = 1.5 * M_PI * (1 + 2 * u(rng)), h = 21 * u(rng);
      x = t * std::cos(t), y = h, z = t * std::sin(t);
    } else if (kind == "torus") {
      const double a = 2 * M_PI * u(rng), b = 2 * M_PI * u(rng);
      x = (3 + std::cos(b)) * std::cos(a), y = (3 + std::cos(b)) * std::sin(a), z = std::sin(b);
    } else {
      throw UsageError("--manifold: unknown manifold '" + kind + "' (swiss-roll, torus)");
    }
    v[static_cast<size_t>(i * 3)] = static_cast<float>(x + g(rng));
    v[static_cast<size_t>(i * 3 + 1)] = static_cast<float>(y + g(rng));
    v[static_cast<size_t>(i * 3 + 2)] = static_cast<float>(z + g(rng));
  }
  Dataset ds(n, 3, std::move(v));
  ds.source = kind;
  ds.format = "generated";
  ds.source_dtype = "float32";
  return ds;
}

/// The full symmetric matrix (diagonal merged in) as CSR arrays for SciPy.
void write_matrix(const std::string& dir, const DiffusionMatrix& a) {
  std::vector<int64_t> ptr(static_cast<size_t>(a.n + 1), 0);
  std::vector<int32_t> idx;
  std::vector<double> val;
  idx.reserve(static_cast<size_t>(a.nnz()));
  val.reserve(static_cast<size_t>(a.nnz()));
  for (int64_t i = 0; i < a.n; ++i) {
    bool diag_done = false;
    for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i + 1)]; ++e) {
      if (!diag_done && a.col[static_cast<size_t>(e)] > i) {
        idx.push_back(static_cast<int32_t>(i));
        val.push_back(a.diag[static_cast<size_t>(i)]);
        diag_done = true;
      }
      idx.push_back(a.col[static_cast<size_t>(e)]);
      val.push_back(a.val[static_cast<size_t>(e)]);
    }
    if (!diag_done) {
      idx.push_back(static_cast<int32_t>(i));
      val.push_back(a.diag[static_cast<size_t>(i)]);
    }
    ptr[static_cast<size_t>(i + 1)] = static_cast<int64_t>(idx.size());
  }
  OutputTransaction tx(dir);
  npy::write(tx.path("indptr.npy"), ptr.data(), {a.n + 1});
  npy::write(tx.path("indices.npy"), idx.data(), {static_cast<int64_t>(idx.size())});
  npy::write(tx.path("data.npy"), val.data(), {static_cast<int64_t>(val.size())});
  tx.commit();
}

/// What `manifold bench embed` was asked.
struct BenchEmbedOptions {
  int64_t n = 100000;
  int k = 20;
  std::string manifold = "swiss-roll";
  double noise = 0.05;
  uint64_t seed = 1;
  int pairs = 10;  ///< --eigenpairs
  int repeats = 5;
  int reembed_k = 0;
  std::string only = "all";  ///< all | eigensolve | reembed | device
  std::string graph_dir, matrix_dir, json_path;
  DiffusionParams diffusion;
};

BenchEmbedOptions parse_bench_embed_options(int argc, char** argv) {
  Args a("bench embed", "Time the diffusion-map eigensolve and re-embedding on a generated manifold.",
         {value("-n", "N", "points", "100000"), value("-k,--k", "K", "neighbours per point", "20"),
          value("--manifold", "swiss-roll|torus", "the generated manifold", "swiss-roll"),
          value("--noise", "SIGMA", "Gaussian noise added to the points", "0.05"),
          value("--seed", "S", "random seed", "1"),
          value("--components", "M", "diffusion coordinates", "eigenpairs - 1"),
          value("--eigenpairs", "P", "eigenpairs solved for", "10"), value("--repeats", "R", "measured runs", "5"),
          value("--tolerance", "TOL", "eigensolver: relative residual per eigenvalue", "1e-10"),
          value("--ncv", "NCV", "Lanczos basis size (0: chosen)", "0"),
          value("--threads", "T", "CPU threads (0: every core)", "0"),
          value("--graph", "DIR", "keep the k-NN graph here and reuse it"),
          value("--matrix", "DIR", "write the matrix as CSR arrays for SciPy"), value("--json", "FILE", "the results"),
          value("--reembed-k", "K'", "the new k' of the re-embedding", "3/4 of K"),
          value("--only", "all|eigensolve|reembed|device", "what to time", "all"),
          value("--eigensolver", "auto|cpu|gpu", "where the solves run", "auto")},
         argc, argv, 3);
  if (!a.positionals().empty()) throw UsageError("bench embed: unexpected argument '" + a.positionals()[0] + "'");
  BenchEmbedOptions o;
  o.n = a.integer("-n", 100000, 100, INT64_MAX);
  o.k = static_cast<int>(a.integer("-k", 20, 2, 4096));
  o.manifold = a.str("--manifold", "swiss-roll");
  o.noise = a.real("--noise", 0.05);
  o.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  o.pairs = static_cast<int>(a.integer("--eigenpairs", 10, 2, 1000));
  o.repeats = static_cast<int>(a.integer("--repeats", 5, 1, 1000));
  o.reembed_k = static_cast<int>(a.integer("--reembed-k", std::max(2, o.k * 3 / 4), 1, o.k));
  o.only = a.str("--only", "all");
  if (o.only != "all" && o.only != "eigensolve" && o.only != "reembed" && o.only != "device")
    throw UsageError("--only: '" + o.only + "' is not one of all, eigensolve, reembed, device");
  DiffusionParams& p = o.diffusion;
  p.components = static_cast<int>(a.integer("--components", o.pairs - 1, 1, 1000));
  p.tolerance = a.real("--tolerance", 1e-10);
  p.ncv = static_cast<int>(a.integer("--ncv", 0, 0, 100000));
  p.threads = static_cast<int>(a.integer("--threads", 0, 0, 4096));
  p.eigensolver = a.str("--eigensolver", "auto");
  o.graph_dir = a.str("--graph");
  o.matrix_dir = a.str("--matrix");
  o.json_path = a.str("--json");
  validate(p, o.n, o.k);
  return o;
}

/// The graph: read from --graph DIR when it holds one of this n and k, else
/// built on the CPU (and cached there); the k-NN build is not what is timed.
KnnGraph bench_graph(const BenchEmbedOptions& o, Progress& progress, nlohmann::json& out) {
  KnnGraph g;
  bool have = false;
  if (!o.graph_dir.empty() && fs::exists(fs::path(o.graph_dir) / "indices.npy")) {
    g = read_graph(o.graph_dir);
    have = g.n == o.n && g.k == o.k;
  }
  if (!have) {
    Dataset ds = manifold_points(o.manifold, o.n, o.noise, o.seed);
    register_cpu_backend();
    KnnParams kp;
    kp.k = o.k;
    kp.threads = o.diffusion.threads;
    const auto t = Clock::now();
    g = make_backend("cpu")->build(ds, kp, progress);
    out["graph_build_s"] = seconds_since(t);
    if (!o.graph_dir.empty()) write_graph(o.graph_dir, g);
  }
  out["graph"] = {{"n", g.n}, {"k", g.k}, {"backend", g.backend}, {"cached", have}};
  std::printf("graph: N=%lld k=%d (%s)\n", static_cast<long long>(g.n), g.k, have ? "cached" : "built");
  return g;
}

EigenOptions eigen_options(const DiffusionParams& p, bool lock_check) {
  EigenOptions o;
  o.tolerance = p.tolerance;
  o.ncv = p.ncv;
  o.threads = p.threads;
  o.lock_check = lock_check;
  return o;
}

/// The CPU eigensolve (Spectra), with or without the lock check, --repeats times.
nlohmann::json time_cpu_eigensolve(const BenchEmbedOptions& o, const DiffusionMatrix& m, bool check,
                                   Progress& progress) {
  const DiffusionParams& p = o.diffusion;
  std::vector<double> runs;
  Eigenpairs last;
  for (int r = 0; r < o.repeats; ++r) {
    const auto t0 = Clock::now();
    last = top_eigenpairs(m, o.pairs, eigen_options(p, check), progress);
    runs.push_back(seconds_since(t0));
  }
  std::printf(
      "eigensolve (%d pairs, tol %g, ncv %d, %s): median %.4f s over %d runs, %lld mat-vecs, "
      "max residual %.2e\n",
      o.pairs, p.tolerance, last.ncv, check ? "with lock check" : "Spectra alone", median(runs), o.repeats,
      static_cast<long long>(last.matvecs), last.max_residual);
  std::fflush(stdout);
  return {{"eigenpairs", o.pairs},
          {"tolerance", p.tolerance},
          {"ncv", last.ncv},
          {"lock_check", check},
          {"runs_s", runs},
          {"median_s", median(runs)},
          {"matvecs", last.matvecs},
          {"lock_check_matvecs", last.check_matvecs},
          {"lock_check_recovered", last.recovered},
          {"lock_check_settled", last.check_settled},
          {"restarts", last.iterations},
          {"max_residual", last.max_residual},
          {"eigenvalues", last.values}};
}

/// The device eigensolve after one untimed solve (context, handles, first
/// touch), and its eigenvalues against the CPU's (`cpu`: null when the CPU
/// did not solve).
nlohmann::json time_device_eigensolve(const BenchEmbedOptions& o, const DeviceEigensolver& device,
                                      const DiffusionMatrix& m, const nlohmann::json& cpu, Progress& progress) {
  const DiffusionParams& p = o.diffusion;
  const EigenOptions eo = eigen_options(p, true);
  device.solve(m, o.pairs, eo, progress);
  std::vector<double> runs;
  Eigenpairs last;
  for (int r = 0; r < o.repeats; ++r) {
    const auto t0 = Clock::now();
    last = device.solve(m, o.pairs, eo, progress);
    runs.push_back(seconds_since(t0));
  }
  double max_diff = 0;
  if (!cpu.is_null())
    for (int c = 0; c < o.pairs; ++c)
      max_diff = std::max(max_diff,
                          std::abs(last.values[static_cast<size_t>(c)] - cpu["eigenvalues"][c].get<double>()));
  std::printf(
      "eigensolve on the device (%d pairs, tol %g, block %d): median %.4f s over %d runs, %lld mat-vecs "
      "in blocks, max residual %.2e, eigenvalues to %.1e of the CPU's\n",
      o.pairs, p.tolerance, last.ncv, median(runs), o.repeats, static_cast<long long>(last.matvecs), last.max_residual,
      max_diff);
  std::fflush(stdout);
  return {{"method", device.method},
          {"eigenpairs", o.pairs},
          {"tolerance", p.tolerance},
          {"block", last.ncv},
          {"runs_s", runs},
          {"median_s", median(runs)},
          {"matvecs", last.matvecs},
          {"max_residual", last.max_residual},
          {"max_eigenvalue_difference_to_cpu", max_diff},
          {"details", last.details},
          {"eigenvalues", last.values}};
}

/// The runs of one re-embedding: the full solve, the warm one to the same
/// tolerance (and when its 1e-6 iterate was shown), the warm one to 1e-6.
struct ReembedRuns {
  std::vector<double> full_s, warm_s, preview_s, shown_s;
  DiffusionResult full, warm, preview;
};

ReembedRuns run_reembeds(const KnnGraph& g, const DiffusionParams& q, const DiffusionParams& q6,
                         const DiffusionResult& base, int repeats, Progress& progress) {
  ReembedRuns r;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = Clock::now();
    r.full = diffusion_map(g, q, progress);
    r.full_s.push_back(seconds_since(t0));
    t0 = Clock::now();
    // The same solve with RediffusePreview as the GUI runs it (after_s 0
    // here): when its 1e-6 iterate would be drawn.
    RediffusePreview on_the_way;
    on_the_way.after_s = 0;
    double shown_at = -1;
    on_the_way.show = [&](DiffusionResult&&) { shown_at = seconds_since(t0); };
    r.warm = rediffuse(g, q, base, progress, 0, &on_the_way);
    r.warm_s.push_back(seconds_since(t0));
    if (shown_at >= 0) r.shown_s.push_back(shown_at);
    t0 = Clock::now();
    r.preview = rediffuse(g, q6, base, progress);
    r.preview_s.push_back(seconds_since(t0));
  }
  return r;
}

/// Agreement with the full solve, on the orthonormal eigenvectors
/// v = sqrt(d) psi of A: eigenvalues whose 1 - lambda differ by less than
/// 1e-3 relative form a cluster, compared as a subspace (cosine of the
/// largest principal angle = smallest singular value of V_full^T V_warm;
/// |cos| for a single vector); also the largest eigenvalue difference and
/// relative error of 1 - lambda (what sets the diffusion distances).
nlohmann::json agreement(const DiffusionResult& full, const DiffusionResult& r, const DiffusionMatrix& mq) {
  const EmbeddingAgreement e = compare_embeddings(full, r, mq.degree);
  return {{"worst_abs_cos_to_full", e.worst_cos},
          {"clusters", e.clusters},
          {"largest_cluster", e.largest_cluster},
          {"max_eigenvalue_difference_to_full", e.max_eigenvalue_difference},
          {"max_rel_error_1_minus_lambda", e.max_rel_error_1_minus_lambda}};
}

nlohmann::json stages(const DiffusionResult& r) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& [s, v] : r.timings) j[s] = v;
  return j;
}

void print_rediffuse(const char* name, const std::vector<double>& runs, const DiffusionResult& r,
                     const nlohmann::json& agree) {
  std::printf(
      "  %s: median %.4f s, %d iterations, %lld mat-vecs, %lld V-cycles, residual %.1e (%s), "
      "worst cos to the full solve %.10f, eigenvalues to %.1e\n",
      name, median(runs), r.solver.value("iterations", 0),
      static_cast<long long>(r.solver.value("matvecs", int64_t{0})),
      static_cast<long long>(r.solver.value("preconditioner_applies", int64_t{0})), r.solver.value("max_residual", 0.0),
      r.solver.value("converged", false) ? "converged" : "not converged", agree["worst_abs_cos_to_full"].get<double>(),
      agree["max_eigenvalue_difference_to_full"].get<double>());
}

/// Re-embedding after a new k' or epsilon on the same graph: the full solve
/// from scratch (diffusion_map), and the warm LOBPCG from the previous
/// embedding (rediffuse) to the same tolerance and to a preview tolerance of
/// 1e-6, with their agreement with the full solve.
nlohmann::json time_reembed(const KnnGraph& g, const DiffusionParams& q, const DiffusionResult& base,
                            const std::string& what, int repeats, Progress& progress) {
  DiffusionParams q6 = q;
  q6.tolerance = std::max(1e-6, q.tolerance);
  const ReembedRuns r = run_reembeds(g, q, q6, base, repeats, progress);
  const DiffusionMatrix mq = diffusion_matrix(g, q, progress);
  const nlohmann::json aw = agreement(r.full, r.warm, mq), ap = agreement(r.full, r.preview, mq);
  std::printf("re-embed after %s: full solve median %.4f s (%lld mat-vecs, residual %.1e)\n", what.c_str(),
              median(r.full_s), static_cast<long long>(r.full.solver.value("matvecs", int64_t{0})),
              r.full.solver.value("max_residual", 0.0));
  print_rediffuse("rediffuse to the tolerance", r.warm_s, r.warm, aw);
  if (!r.shown_s.empty())
    std::printf("    of which its 1e-6 iterate shown (RediffusePreview) at median %.4f s\n", median(r.shown_s));
  print_rediffuse("rediffuse to 1e-6", r.preview_s, r.preview, ap);
  std::fflush(stdout);
  nlohmann::json jw = {{"runs_s", r.warm_s},
                       {"median_s", median(r.warm_s)},
                       {"stages_s", stages(r.warm)},
                       {"solver", r.warm.solver}};
  if (!r.shown_s.empty()) jw["iterate_1e-6_shown"] = {{"runs_s", r.shown_s}, {"median_s", median(r.shown_s)}};
  jw.update(aw);
  nlohmann::json jp = {{"tolerance", q6.tolerance},
                       {"runs_s", r.preview_s},
                       {"median_s", median(r.preview_s)},
                       {"stages_s", stages(r.preview)},
                       {"solver", r.preview.solver}};
  jp.update(ap);
  return nlohmann::json{
      {"k", r.full.k},
      {"epsilon", r.full.epsilon},
      {"components", q.components},
      {"full",
       {{"runs_s", r.full_s}, {"median_s", median(r.full_s)}, {"stages_s", stages(r.full)}, {"solver", r.full.solver}}},
      {"warm", jw},
      {"warm_1e-6", jp}};
}

}  // namespace

int cmd_bench_embed(int argc, char** argv) {
  const BenchEmbedOptions o = parse_bench_embed_options(argc, argv);
  const DiffusionParams& p = o.diffusion;
  // The device eigensolver, timed beside the CPU's when there is one (auto)
  // or asked for (gpu); rediffuse and diffusion_map below follow p.eigensolver.
  const DeviceEigensolver* device = p.eigensolver != "cpu" && device_eigensolver() && device_eigensolver()->available()
                                        ? device_eigensolver()
                                        : nullptr;
  install_cancel_on_signal();
  TerminalProgress sink(stderr, true);
  Progress progress(&sink, &cancel_flag());
  nlohmann::json out = bench_environment(p.threads);
  out["data"] = {{"manifold", o.manifold}, {"n", o.n}, {"d", 3}, {"noise", o.noise}, {"seed", o.seed}};
  const KnnGraph g = bench_graph(o, progress, out);

  const auto t = Clock::now();
  const DiffusionMatrix m = diffusion_matrix(g, p, progress);
  out["matrix"] = {{"n", m.n},
                   {"nnz", m.nnz()},
                   {"epsilon", m.epsilon},
                   {"components", m.graph_components},
                   {"build_s", seconds_since(t)}};
  if (!o.matrix_dir.empty()) write_matrix(o.matrix_dir, m);

  if (o.only == "device" && !device) throw UsageError("bench embed --only device: no device eigensolver here");
  if (o.only == "all" || o.only == "eigensolve") {
    // One untimed solve first, so page faults and thread start-up are not
    // measured; then the default (what embed runs) and the variant, for the record.
    EigenOptions warm_up;
    warm_up.tolerance = p.tolerance;
    top_eigenpairs(m, o.pairs, warm_up, progress);
    out["eigensolve"] = time_cpu_eigensolve(o, m, true, progress);
    out["eigensolve_without_lock_check"] = time_cpu_eigensolve(o, m, false, progress);
  }
  if (o.only != "reembed" && device)
    out["eigensolve_device"] = time_device_eigensolve(o, *device, m, out.value("eigensolve", nlohmann::json()),
                                                      progress);
  if (o.only == "eigensolve" || o.only == "device") {
    if (!o.json_path.empty()) write_text_file(o.json_path, out.dump(2) + "\n");
    return 0;
  }

  const DiffusionResult base = diffusion_map(g, p, progress);
  DiffusionParams qk = p;
  qk.k = o.reembed_k;
  DiffusionParams qe = p;
  qe.epsilon = std::to_string(2 * m.epsilon);
  const std::string k_change = "k' " + std::to_string(o.k) + " -> " + std::to_string(o.reembed_k);
  out["reembed"] = {{"k_change", time_reembed(g, qk, base, k_change, o.repeats, progress)},
                    {"epsilon_change", time_reembed(g, qe, base, "epsilon x 2", o.repeats, progress)}};
  if (!o.json_path.empty()) write_text_file(o.json_path, out.dump(2) + "\n");
  return 0;
}

}  // namespace manifold::cli
