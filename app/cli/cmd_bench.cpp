// manifold bench: times k-NN graph construction (median of repeats after
// warm-up) per backend and selection strategy, on random data or a real
// dataset, and writes JSON. Per-stage times come from the backend (the GPU
// backend measures them with CUDA events).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <thread>
#include <unistd.h>

#include "cli/commands.h"
#include "manifold/dataset.h"
#include "manifold/error.h"
#include "manifold/output.h"
#include "manifold/parallel.h"
#include "manifold/terminal_progress.h"

namespace manifold::cli {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

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

}  // namespace

int cmd_bench(int argc, char** argv) {
  auto specs = knn_option_specs();
  for (auto s : {"-n", "-d", "--data", "--json", "--repeats", "--warmup", "--seed"}) specs.push_back({s});
  Args a("bench", specs, argc, argv, 2);
  if (!a.positionals().empty()) throw UsageError("bench: unexpected argument '" + a.positionals()[0] + "'");
  KnnParams base = knn_params_from(a);
  if (!a.has("-k")) base.k = 10;
  const int repeats = static_cast<int>(a.integer("--repeats", 5, 1, 1000));
  const int warmup = static_cast<int>(a.integer("--warmup", 1, 0, 100));
  const uint64_t seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));

  Dataset ds;
  if (a.has("--data")) {
    ReadOptions ro;
    ro.hdf5_dataset = a.str("--dataset");
    ro.max_rows = a.integer("-n", -1, 2, INT64_MAX);
    ds = load_dataset(a.str("--data"), ro);
  } else {
    ds = random_dataset(a.integer("-n", 20000, 2, INT64_MAX), a.integer("-d", 256, 1, 1 << 24), seed);
  }

  std::vector<std::string> backends;
  std::string bname = a.str("--backend", "auto");
  if (bname == "all") backends = backend_names();
  else backends = {bname == "auto" ? (backend_available("gpu") ? "gpu" : "cpu") : bname};
  std::vector<std::string> selects;
  std::string sname = a.str("--select", "auto");
  if (sname == "all") selects = {"warp", "quick", "sort", "heap", "merge", "bitonic", "auto"};
  else selects = {sname};

  install_cancel_on_signal();
  TerminalProgress sink(stderr, true);
  Progress progress(&sink, &cancel_flag());

  nlohmann::json out;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  out["host"] = host;
  out["cpu_threads"] = hardware_threads(base.threads);
  out["data"] = {{"source", ds.source}, {"n", ds.rows()}, {"d", ds.cols()}, {"fingerprint", ds.fingerprint()}};
  out["repeats"] = repeats;
  out["warmup"] = warmup;
  out["cases"] = nlohmann::json::array();

  std::printf("%-6s %-8s %9s %6s %6s %-10s %12s\n", "backend", "select", "n", "d", "k", "metric", "median_s");
  for (const auto& b : backends) {
    auto backend = make_backend(b);
    for (const auto& s : selects) {
      KnnParams p = base;
      p.select = s;
      nlohmann::json c;
      c["backend"] = b;
      c["select"] = s;
      c["n"] = ds.rows();
      c["d"] = ds.cols();
      c["k"] = p.k;
      c["metric"] = to_string(p.metric);
      std::vector<double> totals;
      std::map<std::string, std::vector<double>> stages;
      KnnGraph last;
      try {
        for (int r = 0; r < warmup + repeats; ++r) {
          auto t0 = std::chrono::steady_clock::now();
          last = backend->build(ds, p, progress);
          double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (r < warmup) continue;
          totals.push_back(wall);
          for (auto& [st, t] : last.timings) stages[st].push_back(t);
        }
      } catch (const Cancelled&) {
        throw;
      } catch (const Error& e) {
        c["error"] = e.what();
        out["cases"].push_back(c);
        std::printf("%-6s %-8s %9lld %6lld %6d %-10s %12s  (%s)\n", b.c_str(), s.c_str(),
                    static_cast<long long>(ds.rows()), static_cast<long long>(ds.cols()), p.k,
                    to_string(p.metric).c_str(), "-", e.what());
        continue;
      }
      c["strategy"] = last.strategy;
      c["wall_s"] = totals;
      c["median_wall_s"] = median(totals);
      nlohmann::json st = nlohmann::json::object();
      for (auto& [name, v] : stages) st[name] = median(v);
      c["median_stage_s"] = st;
      c["extra"] = last.extra;
      out["cases"].push_back(c);
      std::printf("%-6s %-8s %9lld %6lld %6d %-10s %12.4f\n", b.c_str(), s.c_str(), static_cast<long long>(ds.rows()),
                  static_cast<long long>(ds.cols()), p.k, to_string(p.metric).c_str(), median(totals));
      std::fflush(stdout);
    }
  }
  if (a.has("--json")) write_text_file(a.str("--json"), out.dump(2) + "\n");
  return 0;
}

}  // namespace manifold::cli
