// manifold bench: times k-NN graph construction (median of repeats after
// warm-up) per backend and selection strategy, on random data or a real
// dataset, and writes JSON. Per-stage times come from the backend (the GPU
// backend measures them with CUDA events). -n and -k take lists, so one run
// covers a grid of cases on the same data (smaller N are prefixes of the
// largest). With the GPU backend it also measures the device's cuBLAS SGEMM
// rate in the same run and reports each case against the float32 GEMM floor
// N^2 d / rate (the distance matrix is symmetric: half of 2 N^2 d).
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>
#include <unistd.h>

#include "cli/commands.h"
#include "manifold/dataset.h"
#include "manifold/error.h"
#include "manifold/output.h"
#include "manifold/parallel.h"
#include "manifold/terminal_progress.h"
#ifdef MANIFOLD_HAVE_CUDA
#include "manifold/gpu/gpu_knn_backend.h"
#endif

namespace manifold::cli {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

namespace {

Dataset random_dataset(int64_t n, int64_t d, uint64_t seed) {
  std::vector<float> values(static_cast<size_t>(n * d));
  // Deterministic per block so the data do not depend on the thread count.
  const int64_t block = 4096;
  parallel_for(0, (n + block - 1) / block, 0, [&](int64_t b) {
    std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(b));
    std::normal_distribution<float> normal(0.f, 1.f);
    int64_t r1 = std::min(n, (b + 1) * block);
    for (int64_t i = b * block * d; i < r1 * d; ++i) values[static_cast<size_t>(i)] = normal(rng);
  });
  Dataset ds(n, d, std::move(values));
  ds.source = "random";
  ds.format = "random-normal";
  ds.source_dtype = "float32";
  return ds;
}

/// "-n 10000,100000" -> {10000, 100000}; each value checked like a single one.
std::vector<int64_t> integer_list(const Args& a, const std::string& name, int64_t fallback, int64_t lo, int64_t hi) {
  if (!a.has(name)) return {fallback};
  std::vector<int64_t> out;
  std::stringstream ss(a.str(name));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end || v < lo || v > hi)
      throw UsageError(name + ": '" + a.str(name) + "' is not a list of integers between " + std::to_string(lo) +
                       " and " + std::to_string(hi));
    out.push_back(v);
  }
  if (out.empty()) throw UsageError(name + ": empty list");
  return out;
}

/// The first n rows of `ds` as a dataset viewing its memory.
Dataset prefix(const Dataset& ds, int64_t n, const std::shared_ptr<const Dataset>& keep) {
  if (n == ds.rows()) return ds;
  Dataset p(n, ds.cols(), ds.data(), keep);
  p.source = ds.source;
  p.format = ds.format;
  p.source_dtype = ds.source_dtype;
  p.item_shape = ds.item_shape;
  return p;
}

/// What `manifold bench` was asked.
struct BenchOptions {
  KnnParams base;  ///< as knn_params_from, except that -k, --select and --precision may be lists here
  std::vector<std::string> precisions;  ///< names, each parse_precision's
  std::vector<int64_t> ks, ns;
  int repeats = 5, warmup = 1;
  // Short cases (milliseconds) are noisy: repeat past --repeats until the
  // measured runs add up to --min-time-s (at most 100 runs).
  double min_time_s = 0;
  uint64_t seed = 1;
  int64_t sgemm_size = 8192;  ///< GPU builds only
  int64_t d = 256;            ///< columns of the random data (without --data)
  // Large grids (--select all over N up to 1M): a case predicted from the
  // same strategy and k at the largest smaller N measured in this run (loop
  // time x (N/N')^2, the rest x N/N') to take longer than --long-case-s runs
  // once without warm-up; one predicted over --case-limit-s and over 1.15x
  // the cell's best prediction is skipped (it cannot win) and recorded so.
  // At such cells `auto` runs first and the strategy it picked reuses its
  // measurement (the same code), so the cell costs no extra build.
  double long_case_s = 1e300, case_limit_s = 1e300;
  std::optional<std::string> data_path, json_path;  ///< --data, --json
  std::string hdf5_dataset;
  bool has_n = false;
  std::string backend_arg, select_arg;  ///< as given
  std::vector<std::string> backends;
  std::vector<std::string> selects;  ///< names, each parse_select's
};

/// The options, checked in the order of the command line's documentation.
BenchOptions parse_bench_options(int argc, char** argv) {
  auto specs = knn_option_specs();
  for (OptionSpec& s : specs) {
    if (s.name == "-k") s = value("-k,--k", "K[,K...]", "neighbours per point; a list runs each", "10");
    if (s.name == "--backend") s.help = "auto, all, cpu, gpu or mpi";
    if (s.name == "--select") s.help += "; all, or a list, runs each";
    if (s.name == "--precision") s.help = "exact, fast-exact, or a list of both";
  }
  specs.insert(specs.end(),
               {value("-n", "N[,N...]", "rows; a list runs each on prefixes of the same data", "20000"),
                value("-d", "D", "columns of the random data", "256"),
                value("--data", "FILE", "a dataset instead of random normal rows"),
                value("--json", "FILE", "the results, written after every case"),
                value("--repeats", "R", "measured runs per case", "5"),
                value("--warmup", "W", "unmeasured runs first", "1"), value("--seed", "S", "random data seed", "1"),
                value("--sgemm", "SIZE", "the cuBLAS SGEMM size measured as the floor (0: none)", "8192"),
                value("--case-limit-s", "SECONDS", "skip cases predicted over this and 1.15x the best (default: none)"),
                value("--long-case-s", "SECONDS", "run cases predicted over this once (default: none)"),
                value("--min-time-s", "SECONDS", "repeat until the runs add up to this (at most 100)", "0")});
  Args a("bench", "Time k-NN graph construction per backend and selection; manifold bench embed: the eigensolve.",
         specs, argc, argv, 2);
  if (!a.positionals().empty()) throw UsageError("bench: unexpected argument '" + a.positionals()[0] + "'");
  BenchOptions o;
  KnnParams& base = o.base;
  base.metric = parse_metric(a.str("--metric", "euclidean"));
  base.keep_self = a.has("--keep-self");
  base.devices = parse_devices(a.str("--devices", "all"));
  base.gpu_memory = a.bytes("--gpu-memory", 0);
  base.threads = static_cast<int>(a.integer("--threads", 0, 0, 4096));
  // --precision takes a list: exact,fast-exact times both on the same data.
  {
    std::stringstream ps(a.str("--precision", "exact"));
    std::string tok;
    while (std::getline(ps, tok, ',')) {
      if (tok != "exact" && tok != "fast-exact")
        throw UsageError("--precision: '" + a.str("--precision") + "' is not a list of exact, fast-exact");
      o.precisions.push_back(tok);
    }
    if (o.precisions.empty()) throw UsageError("--precision: empty list");
  }
  base.precision = parse_precision(o.precisions.front());
  o.ks = integer_list(a, "-k", 10, 1, 1 << 20);
  o.ns = integer_list(a, "-n", 20000, 2, INT64_MAX);
  o.repeats = static_cast<int>(a.integer("--repeats", 5, 1, 1000));
  o.warmup = static_cast<int>(a.integer("--warmup", 1, 0, 100));
  o.min_time_s = a.real("--min-time-s", 0.0);
  if (o.min_time_s < 0) throw UsageError("--min-time-s: must be >= 0");
  o.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  o.sgemm_size = a.integer("--sgemm", 8192, 0, 65536);
  if (a.has("--long-case-s")) o.long_case_s = std::stod(a.str("--long-case-s"));
  if (a.has("--case-limit-s")) o.case_limit_s = std::stod(a.str("--case-limit-s"));
  if (a.has("--data")) o.data_path = a.str("--data");
  o.hdf5_dataset = a.str("--dataset");
  if (a.has("--json")) o.json_path = a.str("--json");
  o.has_n = a.has("-n");
  if (!o.data_path) o.d = a.integer("-d", 256, 1, 1 << 24);
  o.backend_arg = a.str("--backend", "auto");
  o.select_arg = a.str("--select", "auto");
  return o;
}

/// --data's rows (all of them, or the first max(-n) when -n is given), or
/// random normal rows; UsageError when -n asks for more rows than the file
/// has.
std::shared_ptr<Dataset> load_bench_data(const BenchOptions& o) {
  const int64_t n_max = *std::max_element(o.ns.begin(), o.ns.end());
  auto full = std::make_shared<Dataset>();
  if (o.data_path) {
    ReadOptions ro;
    ro.hdf5_dataset = o.hdf5_dataset;
    ro.max_rows = o.has_n ? n_max : -1;
    *full = load_dataset(*o.data_path, ro);
    for (int64_t n : o.has_n ? o.ns : std::vector<int64_t>{})
      if (n > full->rows())
        throw UsageError("-n " + std::to_string(n) + ": " + *o.data_path + " has only " + std::to_string(full->rows()) +
                         " rows");
  } else {
    *full = random_dataset(n_max, o.d, o.seed);
  }
  return full;
}

/// --backend and --select as lists: "all", one name, or (--select) a
/// comma-separated list that runs each strategy in turn, like "all".
void resolve_backends_and_selects(BenchOptions& o) {
  const std::string& bname = o.backend_arg;
  if (bname == "all") o.backends = backend_names();
  else
    o.backends = {bname == "auto" ? (backend_available("gpu") ? "gpu" : "cpu") : bname};
  const std::string& sname = o.select_arg;
  if (sname == "all") {
    o.selects = {"warp", "quick", "sort", "heap", "merge", "bitonic", "auto"};
  } else {
    for (size_t at = 0; at <= sname.size();) {
      const size_t comma = std::min(sname.find(',', at), sname.size());
      if (comma > at) o.selects.push_back(sname.substr(at, comma - at));
      at = comma + 1;
    }
    if (o.selects.empty()) throw UsageError("--select needs a strategy name");
    for (const std::string& s : o.selects) (void)parse_select(s);  // a bad name: one line, before any case runs
  }
}

/// One case of the run (backend, strategy, precision, n, k) as the JSON
/// records it: skipped, failed, measured, or standing on auto's measurement.
struct BenchCase {
  std::string backend, select, precision, metric;
  int64_t n = 0, d = 0;
  int k = 0;
  std::optional<double> predicted_s;
  std::string skipped;      ///< why it did not run
  std::string measured_as;  ///< "auto": auto's run of the same code stands for it
  int warmup = 0;
  int64_t repeats = 0;  ///< asked for; once measured, the runs measured
  std::string error;
  bool interleaved = false;  ///< measured round-robin with the cell's other cases
  std::string strategy;      ///< the strategy that ran
  std::vector<double> wall_s;
  double median_wall_s = 0;
  std::map<std::string, double> median_stage_s;
  std::map<std::string, std::vector<int64_t>> per_run;  ///< Samples::per_run
  nlohmann::json extra;
  // Against the float32 GEMM floor (the GPU backend with a measured rate).
  std::optional<double> sgemm_tflops, floor_s, over_floor, sgemm_tile_tflops;
  nlohmann::json auto_pick;  ///< the strategy auto picked; null when none

  bool picked_by_auto(const std::string& s) const { return auto_pick.is_string() && auto_pick.get<std::string>() == s; }

  nlohmann::json to_json() const {
    nlohmann::json c = {
        {"backend", backend}, {"select", select}, {"precision", precision}, {"n", n}, {"d", d}, {"k", k},
        {"metric", metric}};
    if (predicted_s) c["predicted_s"] = *predicted_s;
    if (!skipped.empty()) {
      c["skipped"] = skipped;
      return c;
    }
    if (!measured_as.empty()) c["measured_as"] = measured_as;
    c["warmup"] = warmup;
    c["repeats"] = repeats;
    if (!error.empty()) {
      c["error"] = error;
      return c;
    }
    if (interleaved) c["interleaved"] = true;
    c.update({{"strategy", strategy},
              {"wall_s", wall_s},
              {"median_wall_s", median_wall_s},
              {"median_stage_s", median_stage_s},
              {"extra", extra}});
    if (!per_run.empty()) c["per_run"] = per_run;
    if (sgemm_tflops) c["sgemm_tflops"] = *sgemm_tflops;
    if (floor_s) c["floor_s"] = *floor_s;
    if (over_floor) c["over_floor"] = *over_floor;
    if (sgemm_tile_tflops) c["sgemm_tile_tflops"] = *sgemm_tile_tflops;
    if (!auto_pick.is_null()) c["auto_pick"] = auto_pick;
    return c;
  }
};

/// A cell (backend, n, k): each strategy's predicted time from smaller n
/// measured in this run (-1: none), the best of them, and the order the
/// strategies run in (auto first where cases are long).
struct CellPlan {
  std::map<std::string, double> pred;
  double best_pred = -1;
  std::vector<std::string> order;

  double predicted(const std::string& s) const {
    auto it = pred.find(s);
    return it == pred.end() ? -1 : it->second;
  }
  /// Predicted over --case-limit-s and over 1.15x the best prediction: it
  /// cannot win.
  bool skips(const std::string& s, double case_limit_s) const {
    const double ps = predicted(s);
    return s != "auto" && ps > case_limit_s && best_pred >= 0 && ps > 1.15 * best_pred;
  }
};

/// A case's measured runs.
struct Samples {
  std::vector<double> totals;
  std::map<std::string, std::vector<double>> stages;
  /// Each measured run's rows the certificate left to a rescan or the exact
  /// scan (`extra` is the last run's only, and runs can differ).
  std::map<std::string, std::vector<int64_t>> per_run;
  KnnGraph last;  // its timings and extras; the result itself freed
  std::string error;

  void add_run(double wall, const KnnGraph& g) {
    totals.push_back(wall);
    for (auto& [st, t] : g.timings) stages[st].push_back(t);
    for (const char* key : {"uncertified_rows", "fallback_rows"})
      if (g.extra.contains(key) && g.extra[key].is_number()) per_run[key].push_back(g.extra[key].get<int64_t>());
  }
};
using CaseKey = std::pair<std::string, std::string>;  // (select, precision)

/// One `manifold bench` run: the cases of every cell, measured, printed and
/// recorded in `out`, and the comparisons between them.
class BenchRun {
 public:
  BenchRun(const BenchOptions& o, std::shared_ptr<const Dataset> full, Progress& progress)
      : o_(o), full_(std::move(full)), progress_(progress) {}

  void start_record();
  void measure_gemm_rate();
  void run_backend(const std::string& b);
  void compare_cases();
  void write_json() {
    if (o_.json_path) write_text_file(*o_.json_path, out_.dump(2) + "\n");
  }

 private:
  double predict(int64_t n, int64_t k, const std::string& s) const;
  CellPlan plan_cell(int64_t n, int64_t k, const std::vector<std::string>& bsel) const;
  std::map<CaseKey, Samples> run_interleaved(KnnBackend& backend, const Dataset& view, int64_t k, const CellPlan& plan,
                                             const std::vector<std::string>& bprec);
  void run_case(KnnBackend& backend, const std::string& b, const Dataset& view, int64_t k, const CaseKey& key,
                const CellPlan& plan, std::map<CaseKey, Samples>& interleaved, std::optional<BenchCase>& auto_case);
  Samples measure(KnnBackend& backend, const Dataset& view, const KnnParams& p, bool long_case);
  void compare_with_gemm_floor(BenchCase& c, const Dataset& view) const;
  void record(const BenchCase& c, const Dataset& view, int64_t k);

  const BenchOptions& o_;
  std::shared_ptr<const Dataset> full_;
  Progress& progress_;
  nlohmann::json out_;
  double sgemm_tflops_ = 0;  // the reference rate of the GPU backend, measured in this run
#ifdef MANIFOLD_HAVE_CUDA
  int gpu0_ = 0;  // the device the GEMM rates are measured on
#endif
  // (n, k, select) -> median per precision, for the speed-up of fast-exact.
  std::map<std::tuple<int64_t, int64_t, std::string>, std::map<std::string, double>> by_precision_;
  // (n, k) -> best median among strategies, for the --select all table.
  std::map<std::pair<int64_t, int64_t>, std::pair<double, std::string>> best_;
  // (k, select) -> (n, median total, median loop) of the largest n measured so far.
  std::map<std::pair<int64_t, std::string>, std::tuple<int64_t, double, double>> measured_;
};

void BenchRun::start_record() {
  const Dataset& ds = *full_;
  out_ = bench_environment(o_.base.threads);
  out_["data"] = {{"source", ds.source}, {"n", ds.rows()}, {"d", ds.cols()}, {"fingerprint", ds.fingerprint()}};
  out_["repeats"] = o_.repeats;
  out_["warmup"] = o_.warmup;
  out_["cases"] = nlohmann::json::array();
}

/// With the GPU backend: cuBLAS SGEMM's rate on this device, the floor each
/// case is reported against, and the table `--select auto` looks up.
void BenchRun::measure_gemm_rate() {
#ifdef MANIFOLD_HAVE_CUDA
  const std::vector<std::string>& backends = o_.backends;
  const int64_t sgemm_size = o_.sgemm_size;
  const bool uses_gpu = std::find(backends.begin(), backends.end(), "gpu") != backends.end();
  const int gpu0 = gpu0_ = o_.base.devices.empty() ? 0 : o_.base.devices.front();
  if (uses_gpu && sgemm_size > 0 && backend_available("gpu")) {
    const gpu::SgemmRate r = gpu::measure_sgemm(gpu0, sgemm_size, sgemm_size, sgemm_size, 10);
    sgemm_tflops_ = r.tflops;
    out_["sgemm"] = {{"device", r.device},
                     {"device_name", gpu::device_name(r.device)},
                     {"m", r.m},
                     {"n", r.n},
                     {"k", r.k},
                     {"median_s", r.median_s},
                     {"tflops", r.tflops},
                     {"math_mode", r.math_mode},
                     {"layout", "C = A^T B, float32, cuBLAS"}};
    std::printf("cuBLAS SGEMM %lldx%lldx%lld on GPU %d: %.2f TFLOP/s (%s math)\n", static_cast<long long>(r.m),
                static_cast<long long>(r.n), static_cast<long long>(r.k), gpu0, r.tflops, r.math_mode.c_str());
  }
  if (uses_gpu) {
    // What `--select auto` looks up in this run (built in, or MANIFOLD_SELECT_TABLE).
    const std::string file = gpu::select_table_file();
    out_["select_table"] = {{"file", file.empty() ? "built in" : file}, {"text", gpu::select_table_text()}};
  }
#endif
}

double BenchRun::predict(int64_t n, int64_t k, const std::string& s) const {
  auto it = measured_.find({k, s});
  if (it == measured_.end()) return -1;
  const auto [n0, total, loop] = it->second;
  const double r = static_cast<double>(n) / static_cast<double>(n0);
  return loop * r * r + std::max(0.0, total - loop) * r;
}

CellPlan BenchRun::plan_cell(int64_t n, int64_t k, const std::vector<std::string>& bsel) const {
  CellPlan plan;
  for (const auto& s : bsel) {
    plan.pred[s] = predict(n, k, s);
    if (s != "auto" && plan.pred[s] >= 0 && (plan.best_pred < 0 || plan.pred[s] < plan.best_pred))
      plan.best_pred = plan.pred[s];
  }
  plan.order = bsel;
  auto& order = plan.order;
  if (plan.best_pred > o_.long_case_s && std::find(order.begin(), order.end(), "auto") != order.end()) {
    order.erase(std::find(order.begin(), order.end(), "auto"));
    order.insert(order.begin(), "auto");
  }
  return plan;
}

void BenchRun::run_backend(const std::string& b) {
  auto backend = make_backend(b);
  // The cpu backend has one selection and is exact: one case per cell, not
  // the same run under several names.
  std::vector<std::string> bsel = o_.selects, bprec = o_.precisions;
  if (backend->name() == "cpu") {
    const bool fast = std::find(o_.precisions.begin(), o_.precisions.end(), "fast-exact") != o_.precisions.end();
    // --select as given: one name, a list or "all".
    note_ignored_gpu_options(o_.select_arg, fast ? Precision::FastExact : Precision::Exact, "cpu");
    bsel = {"auto"};
    bprec = {"exact"};
  }
  const Dataset& ds = *full_;
  std::vector<int64_t> case_ns = o_.ns;
  if (o_.data_path && !o_.has_n) case_ns = {ds.rows()};
  for (int64_t n : case_ns) {
    const Dataset view = prefix(ds, n, full_);
    for (int64_t k : o_.ks) {
      const CellPlan plan = plan_cell(n, k, bsel);
      // Short cells with several cases run them round-robin first.
      std::map<CaseKey, Samples> interleaved;
      if (!(plan.best_pred > o_.long_case_s) && bsel.size() * bprec.size() > 1)
        interleaved = run_interleaved(*backend, view, k, plan, bprec);
      std::optional<BenchCase> auto_case;  // the auto case of this cell, when it ran first
      for (const auto& s : plan.order)
        for (const auto& prec : bprec) run_case(*backend, b, view, k, {s, prec}, plan, interleaved, auto_case);
    }
  }
}

/// The cell's cases round-robin (warm-up round, then rounds until every case
/// has its repeats and --min-time-s, each round in a fresh random order), so
/// the machine's drift over the seconds a cell takes (clocks, other
/// tenants; 10-20% in millisecond cells) falls on every strategy alike and
/// the cell's comparison, auto's included, is fair. Cases to be skipped or
/// measured once on their own (long) are left out.
std::map<CaseKey, Samples> BenchRun::run_interleaved(KnnBackend& backend, const Dataset& view, int64_t k,
                                                     const CellPlan& plan, const std::vector<std::string>& bprec) {
  const int64_t n = view.rows();
  std::map<CaseKey, Samples> interleaved;
  std::vector<CaseKey> todo;
  for (const auto& s : plan.order)
    for (const auto& prec : bprec) {
      const double ps = plan.predicted(s);
      if (plan.skips(s, o_.case_limit_s)) continue;
      if (ps > o_.long_case_s) continue;  // measured once below, on its own
      todo.emplace_back(s, prec);
      interleaved[todo.back()];
    }
  // Each round runs the cases in a fresh random order (fixed seed), so
  // what a case leaves behind (freed device memory, a cold cache, a
  // clock change) does not always fall on the same successor.
  std::vector<size_t> perm(todo.size());
  for (size_t j = 0; j < perm.size(); ++j) perm[j] = j;
  std::mt19937 order_rng(static_cast<unsigned>(n * 31 + k));
  for (int round = 0;; ++round) {
    bool any = false;
    if (round > 0) std::shuffle(perm.begin(), perm.end(), order_rng);
    for (size_t j : perm) {
      const auto& key = todo[j];
      Samples& sm = interleaved[key];
      double sum = 0;
      for (double t : sm.totals) sum += t;
      if (!sm.error.empty() || !(round < o_.warmup + o_.repeats || (sum < o_.min_time_s && sm.totals.size() < 100)))
        continue;
      any = true;
      KnnParams p = o_.base;
      p.select = parse_select(key.first);
      p.precision = parse_precision(key.second);
      p.k = static_cast<int>(k);
      try {
        sm.last = KnnGraph{};
        const auto t0 = std::chrono::steady_clock::now();
        KnnGraph g = backend.build(view, p, progress_);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        decltype(g.indices)().swap(g.indices);
        decltype(g.distances)().swap(g.distances);
        if (round >= o_.warmup) sm.add_run(wall, g);
        sm.last = std::move(g);
      } catch (const Cancelled&) {
        throw;
      } catch (const Error& e) {
        sm.error = e.what();
      }
    }
    if (!any) break;
  }
  return interleaved;
}

/// One case on its own: warm-up, then its repeats (and runs until
/// --min-time-s, at most 100); a long case once without warm-up.
Samples BenchRun::measure(KnnBackend& backend, const Dataset& view, const KnnParams& p, bool long_case) {
  const int case_warmup = long_case ? 0 : o_.warmup, case_repeats = long_case ? 1 : o_.repeats;
  Samples sm;
  double measured_s = 0;
  for (int r = 0;
       r < case_warmup + case_repeats || (!long_case && measured_s < o_.min_time_s && sm.totals.size() < 100); ++r) {
    sm.last = KnnGraph{};  // the previous result's memory back before the next build
    auto t0 = std::chrono::steady_clock::now();
    sm.last = backend.build(view, p, progress_);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r < case_warmup) continue;
    sm.add_run(wall, sm.last);
    measured_s += wall;
  }
  return sm;
}

void BenchRun::run_case(KnnBackend& backend, const std::string& b, const Dataset& view, int64_t k, const CaseKey& key,
                        const CellPlan& plan, std::map<CaseKey, Samples>& interleaved,
                        std::optional<BenchCase>& auto_case) {
  const auto& [s, prec] = key;
  KnnParams p = o_.base;
  p.select = parse_select(s);
  p.precision = parse_precision(prec);
  p.k = static_cast<int>(k);
  BenchCase c;
  c.backend = b;
  c.select = s;
  c.precision = prec;
  c.n = view.rows();
  c.d = view.cols();
  c.k = p.k;
  c.metric = to_string(p.metric);
  const double ps = plan.predicted(s);
  if (ps >= 0) c.predicted_s = ps;
  if (plan.skips(s, o_.case_limit_s)) {
    char why[160];
    std::snprintf(why, sizeof why, "predicted %.1f s > --case-limit-s %.0f and > 1.15 x the best prediction %.1f s", ps,
                  o_.case_limit_s, plan.best_pred);
    c.skipped = why;
    out_["cases"].push_back(c.to_json());
    std::printf("%-6s %-8s %-8s %-10s %9lld %6lld %6d %-10s %12s  (skipped: %s)\n", b.c_str(), s.c_str(), "-",
                prec.c_str(), static_cast<long long>(view.rows()), static_cast<long long>(view.cols()), p.k,
                to_string(p.metric).c_str(), "-", why);
    return;
  }
  if (s != "auto" && auto_case && auto_case->picked_by_auto(s) && auto_case->precision == prec) {
    // auto ran this strategy's code in this cell: its measurement stands for both.
    BenchCase same = *auto_case;
    same.select = s;
    same.measured_as = "auto";
    out_["cases"].push_back(same.to_json());
    const double med = same.median_wall_s;
    auto cell = std::make_pair(view.rows(), k);
    if (!best_.count(cell) || med < best_[cell].first) best_[cell] = {med, s};
    std::printf("%-6s %-8s %-8s %-10s %9lld %6lld %6d %-10s %12.4f  (the auto run above)\n", b.c_str(), s.c_str(),
                s.c_str(), prec.c_str(), static_cast<long long>(view.rows()), static_cast<long long>(view.cols()), p.k,
                to_string(p.metric).c_str(), med);
    return;
  }
  const bool long_case = ps > o_.long_case_s;
  c.warmup = long_case ? 0 : o_.warmup;
  c.repeats = long_case ? 1 : o_.repeats;
  Samples sm;
  try {
    if (auto it = interleaved.find(key); it != interleaved.end()) {
      if (!it->second.error.empty()) throw Error(it->second.error);
      sm = std::move(it->second);
      c.interleaved = true;
    } else {
      sm = measure(backend, view, p, long_case);
    }
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    c.error = e.what();
    out_["cases"].push_back(c.to_json());
    std::printf("%-6s %-8s %-8s %-10s %9lld %6lld %6d %-10s %12s  (%s)\n", b.c_str(), s.c_str(), "-", prec.c_str(),
                static_cast<long long>(view.rows()), static_cast<long long>(view.cols()), p.k,
                to_string(p.metric).c_str(), "-", e.what());
    return;
  }
  const KnnGraph& last = sm.last;
  c.strategy = last.strategy;
  c.repeats = static_cast<int64_t>(sm.totals.size());
  c.median_wall_s = median(sm.totals);
  c.wall_s = std::move(sm.totals);
  for (auto& [name, v] : sm.stages) c.median_stage_s[name] = median(v);
  c.per_run = std::move(sm.per_run);
  c.extra = last.extra;
  if (b == "gpu" && sgemm_tflops_ > 0) compare_with_gemm_floor(c, view);
  if (last.extra.contains("auto_pick")) c.auto_pick = last.extra["auto_pick"];
  out_["cases"].push_back(c.to_json());
  if (s == "auto") auto_case = c;
  // Written after every case, so a run cut short keeps what it measured.
  write_json();
  record(c, view, k);
}

/// The float32 GEMM floor of the symmetric problem (N^2 d multiply-adds at
/// the measured SGEMM rate) and the case's time over it.
void BenchRun::compare_with_gemm_floor(BenchCase& c, const Dataset& view) const {
  const double flop = static_cast<double>(view.rows()) * static_cast<double>(view.rows()) *
                      static_cast<double>(view.cols());
  const double floor_s = flop / (sgemm_tflops_ * 1e12);
  c.sgemm_tflops = sgemm_tflops_;
  c.floor_s = floor_s;
  c.over_floor = c.median_wall_s / floor_s;
#ifdef MANIFOLD_HAVE_CUDA
  // cuBLAS alone on one tile of this case: how much of the gap is the
  // GEMM's own efficiency at this shape.
  if (c.extra.contains("tile_rows")) {
    const gpu::SgemmRate tr = gpu::measure_sgemm(gpu0_, c.extra["tile_rows"].get<int64_t>(),
                                                 c.extra["tile_cols"].get<int64_t>(), view.cols(), 20);
    c.sgemm_tile_tflops = tr.tflops;
  }
#endif
}

/// A measured case into the predictions, the best per cell and the
/// precision pairs, and its line on stdout.
void BenchRun::record(const BenchCase& c, const Dataset& view, int64_t k) {
  const std::string& s = c.select;
  const double med = c.median_wall_s;
  const auto& st = c.median_stage_s;
  {
    const double loop = st.count("distances+select") ? st.at("distances+select") : med;
    measured_[{k, s}] = {view.rows(), med, std::min(loop, med)};
  }
  auto cell = std::make_pair(view.rows(), k);
  if (s != "auto" && (!best_.count(cell) || med < best_[cell].first)) best_[cell] = {med, s};
  by_precision_[{view.rows(), k, s}][c.precision] = med;
  std::string sel = "-";
  if (st.count("select")) sel = std::to_string(st.at("select")).substr(0, 8);
  std::string over = "-";
  if (c.over_floor) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", *c.over_floor);
    over = buf;
  }
  char reeval[32] = "-";
  if (c.extra.contains("reevaluated_per_row"))
    std::snprintf(reeval, sizeof reeval, "%.1f", c.extra["reevaluated_per_row"].get<double>());
  std::printf("%-6s %-8s %-8s %-10s %9lld %6lld %6d %-10s %12.4f %10s %8s %9s\n", c.backend.c_str(), s.c_str(),
              c.strategy.c_str(), c.precision.c_str(), static_cast<long long>(view.rows()),
              static_cast<long long>(view.cols()), c.k, c.metric.c_str(), med, sel.c_str(), over.c_str(), reeval);
  std::fflush(stdout);
}

/// The tables across cases: the fastest strategy per (n, k) when several
/// ran, and exact over fast-exact where both did.
void BenchRun::compare_cases() {
  if (o_.selects.size() > 1) {
    nlohmann::json winners = nlohmann::json::array();
    std::printf("\nfastest strategy per (n, k):\n%9s %6s %-8s %12s\n", "n", "k", "select", "median_s");
    for (auto& [key, v] : best_) {
      winners.push_back({{"n", key.first}, {"k", key.second}, {"select", v.second}, {"median_wall_s", v.first}});
      std::printf("%9lld %6lld %-8s %12.4f\n", static_cast<long long>(key.first), static_cast<long long>(key.second),
                  v.second.c_str(), v.first);
    }
    out_["winners"] = winners;
  }
  if (o_.precisions.size() > 1) {
    // Measured in this run, on the same data: exact time over fast-exact time.
    nlohmann::json ratios = nlohmann::json::array();
    for (auto& [key, m] : by_precision_)
      if (m.count("exact") && m.count("fast-exact")) {
        const double r = m["exact"] / m["fast-exact"];
        ratios.push_back({{"n", std::get<0>(key)},
                          {"k", std::get<1>(key)},
                          {"select", std::get<2>(key)},
                          {"exact_s", m["exact"]},
                          {"fast_exact_s", m["fast-exact"]},
                          {"speedup", r}});
        std::printf("fast-exact speed-up n=%lld k=%lld: %.2fx\n", static_cast<long long>(std::get<0>(key)),
                    static_cast<long long>(std::get<1>(key)), r);
      }
    out_["precision_speedup"] = ratios;
  }
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  BenchOptions o = parse_bench_options(argc, argv);
  const std::shared_ptr<Dataset> full = load_bench_data(o);
  resolve_backends_and_selects(o);

  install_cancel_on_signal();
  TerminalProgress sink(stderr, true);
  Progress progress(&sink, &cancel_flag());
  BenchRun run(o, full, progress);
  run.start_record();
  run.measure_gemm_rate();
  std::printf("%-6s %-8s %-8s %-10s %9s %6s %6s %-10s %12s %10s %8s %9s\n", "backend", "select", "strategy",
              "precision", "n", "d", "k", "metric", "median_s", "select_s", "/floor", "reeval/row");
  for (const auto& b : o.backends) run.run_backend(b);
  run.compare_cases();
  run.write_json();
  return 0;
}

}  // namespace manifold::cli
