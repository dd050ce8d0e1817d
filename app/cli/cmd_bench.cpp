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

}  // namespace

int cmd_bench(int argc, char** argv) {
  auto specs = knn_option_specs();
  for (auto s : {"-n", "-d", "--data", "--json", "--repeats", "--warmup", "--seed", "--sgemm", "--case-limit-s",
                 "--long-case-s", "--min-time-s"})
    specs.push_back({s});
  Args a("bench", specs, argc, argv, 2);
  if (!a.positionals().empty()) throw UsageError("bench: unexpected argument '" + a.positionals()[0] + "'");
  // As knn_params_from, except that -k may be a list here.
  KnnParams base;
  base.metric = parse_metric(a.str("--metric", "euclidean"));
  base.keep_self = a.has("--keep-self");
  base.select = a.str("--select", "auto");
  base.devices = parse_devices(a.str("--devices", "all"));
  base.gpu_memory = a.bytes("--gpu-memory", 0);
  base.threads = static_cast<int>(a.integer("--threads", 0, 0, 4096));
  // --precision takes a list: exact,fast-exact times both on the same data.
  std::vector<std::string> precisions;
  {
    std::stringstream ps(a.str("--precision", "exact"));
    std::string tok;
    while (std::getline(ps, tok, ',')) {
      if (tok != "exact" && tok != "fast-exact")
        throw UsageError("--precision: '" + a.str("--precision") + "' is not a list of exact, fast-exact");
      precisions.push_back(tok);
    }
    if (precisions.empty()) throw UsageError("--precision: empty list");
  }
  base.precision = precisions.front();
  const std::vector<int64_t> ks = integer_list(a, "-k", 10, 1, 1 << 20);
  const std::vector<int64_t> ns = integer_list(a, "-n", 20000, 2, INT64_MAX);
  const int repeats = static_cast<int>(a.integer("--repeats", 5, 1, 1000));
  const int warmup = static_cast<int>(a.integer("--warmup", 1, 0, 100));
  // Short cases (milliseconds) are noisy: repeat past --repeats until the
  // measured runs add up to --min-time-s (at most 100 runs).
  const double min_time_s = a.real("--min-time-s", 0.0);
  if (min_time_s < 0) throw UsageError("--min-time-s: must be >= 0");
  const uint64_t seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  [[maybe_unused]] const int64_t sgemm_size = a.integer("--sgemm", 8192, 0, 65536);  // GPU builds only
  const int64_t n_max = *std::max_element(ns.begin(), ns.end());
  // Large grids (--select all over N up to 1M): a case predicted from the
  // same strategy and k at the largest smaller N measured in this run (loop
  // time x (N/N')^2, the rest x N/N') to take longer than --long-case-s runs
  // once without warm-up; one predicted over --case-limit-s and over 1.15x
  // the cell's best prediction is skipped (it cannot win) and recorded so.
  // At such cells `auto` runs first and the strategy it picked reuses its
  // measurement (the same code), so the cell costs no extra build.
  const double long_case_s = a.has("--long-case-s") ? std::stod(a.str("--long-case-s")) : 1e300;
  const double case_limit_s = a.has("--case-limit-s") ? std::stod(a.str("--case-limit-s")) : 1e300;

  auto full = std::make_shared<Dataset>();
  if (a.has("--data")) {
    ReadOptions ro;
    ro.hdf5_dataset = a.str("--dataset");
    ro.max_rows = a.has("-n") ? n_max : -1;
    *full = load_dataset(a.str("--data"), ro);
    for (int64_t n : ns)
      if (n > full->rows())
        throw UsageError("-n " + std::to_string(n) + ": " + a.str("--data") + " has only " +
                         std::to_string(full->rows()) + " rows");
  } else {
    *full = random_dataset(n_max, a.integer("-d", 256, 1, 1 << 24), seed);
  }
  const Dataset& ds = *full;
  std::vector<int64_t> case_ns = ns;
  if (a.has("--data") && !a.has("-n")) case_ns = {ds.rows()};

  std::vector<std::string> backends;
  std::string bname = a.str("--backend", "auto");
  if (bname == "all") backends = backend_names();
  else backends = {bname == "auto" ? (backend_available("gpu") ? "gpu" : "cpu") : bname};
  std::vector<std::string> selects;
  std::string sname = a.str("--select", "auto");
  if (sname == "all") {
    selects = {"warp", "quick", "sort", "heap", "merge", "bitonic", "auto"};
  } else {
    // A comma-separated list runs each strategy in turn, like "all".
    for (size_t at = 0; at <= sname.size();) {
      const size_t comma = std::min(sname.find(',', at), sname.size());
      if (comma > at) selects.push_back(sname.substr(at, comma - at));
      at = comma + 1;
    }
    if (selects.empty()) throw UsageError("--select needs a strategy name");
  }

  install_cancel_on_signal();
  TerminalProgress sink(stderr, true);
  Progress progress(&sink, &cancel_flag());

  nlohmann::json out = bench_environment(base.threads);
  out["data"] = {{"source", ds.source}, {"n", ds.rows()}, {"d", ds.cols()}, {"fingerprint", ds.fingerprint()}};
  out["repeats"] = repeats;
  out["warmup"] = warmup;
  out["cases"] = nlohmann::json::array();

  // The reference rate of the GPU backend, measured in this run.
  double sgemm_tflops = 0;
#ifdef MANIFOLD_HAVE_CUDA
  const bool uses_gpu = std::find(backends.begin(), backends.end(), "gpu") != backends.end();
  const int gpu0 = base.devices.empty() ? 0 : base.devices.front();
  if (uses_gpu && sgemm_size > 0 && backend_available("gpu")) {
    const gpu::SgemmRate r = gpu::measure_sgemm(gpu0, sgemm_size, sgemm_size, sgemm_size, 10);
    sgemm_tflops = r.tflops;
    out["sgemm"] = {{"device", r.device},       {"device_name", gpu::device_name(r.device)},
                    {"m", r.m},                 {"n", r.n},
                    {"k", r.k},                 {"median_s", r.median_s},
                    {"tflops", r.tflops},       {"math_mode", r.math_mode},
                    {"layout", "C = A^T B, float32, cuBLAS"}};
    std::printf("cuBLAS SGEMM %lldx%lldx%lld on GPU %d: %.2f TFLOP/s (%s math)\n", static_cast<long long>(r.m),
                static_cast<long long>(r.n), static_cast<long long>(r.k), gpu0, r.tflops, r.math_mode.c_str());
  }
  if (uses_gpu) {
    // What `--select auto` looks up in this run (built in, or MANIFOLD_SELECT_TABLE).
    const char* file = std::getenv("MANIFOLD_SELECT_TABLE");
    out["select_table"] = {{"file", file && *file ? file : "built in"}, {"text", gpu::select_table_text()}};
  }
#endif

  std::printf("%-6s %-8s %-8s %-10s %9s %6s %6s %-10s %12s %10s %8s %9s\n", "backend", "select", "strategy",
              "precision", "n", "d", "k", "metric", "median_s", "select_s", "/floor", "reeval/row");
  // (n, k, select) -> median per precision, for the speed-up of fast-exact.
  std::map<std::tuple<int64_t, int64_t, std::string>, std::map<std::string, double>> by_precision;
  // (n, k) -> best median among strategies, for the --select all table.
  std::map<std::pair<int64_t, int64_t>, std::pair<double, std::string>> best;
  // (k, select) -> (n, median total, median loop) of the largest n measured so far.
  std::map<std::pair<int64_t, std::string>, std::tuple<int64_t, double, double>> measured;
  auto predict = [&](int64_t n, int64_t k, const std::string& s) -> double {
    auto it = measured.find({k, s});
    if (it == measured.end()) return -1;
    const auto [n0, total, loop] = it->second;
    const double r = static_cast<double>(n) / static_cast<double>(n0);
    return loop * r * r + std::max(0.0, total - loop) * r;
  };
  for (const auto& b : backends) {
    auto backend = make_backend(b);
    // The cpu backend has one selection and is exact: one case per cell, not
    // the same run under several names.
    std::vector<std::string> bsel = selects, bprec = precisions;
    if (backend->name() == "cpu") {
      KnnParams asked = base;
      asked.select = sname;  // as given: one name, a list or "all"
      asked.precision = std::find(precisions.begin(), precisions.end(), "fast-exact") != precisions.end()
                            ? "fast-exact" : "exact";
      note_ignored_gpu_options(asked, "cpu");
      bsel = {"auto"};
      bprec = {"exact"};
    }
    for (int64_t n : case_ns) {
      const Dataset view = prefix(ds, n, full);
      for (int64_t k : ks) {
        // This cell's predictions, and its order: auto first where cases are long.
        std::map<std::string, double> pred;
        double best_pred = -1;
        for (const auto& s : bsel) {
          pred[s] = predict(n, k, s);
          if (s != "auto" && pred[s] >= 0 && (best_pred < 0 || pred[s] < best_pred)) best_pred = pred[s];
        }
        std::vector<std::string> order = bsel;
        if (best_pred > long_case_s && std::find(order.begin(), order.end(), "auto") != order.end()) {
          order.erase(std::find(order.begin(), order.end(), "auto"));
          order.insert(order.begin(), "auto");
        }
        nlohmann::json auto_case;  // the auto case of this cell, when it ran first
        // Short cells with several cases run them round-robin (warm-up round,
        // then rounds until every case has its repeats and --min-time-s, each
        // round in a fresh random order), so
        // the machine's drift over the seconds a cell takes (clocks, other
        // tenants; 10-20% in millisecond cells) falls on every strategy
        // alike and the cell's comparison, auto's included, is fair.
        struct Samples {
          std::vector<double> totals;
          std::map<std::string, std::vector<double>> stages;
          KnnGraph last;  // its timings and extras; the result itself freed
          std::string error;
        };
        std::map<std::pair<std::string, std::string>, Samples> interleaved;
        if (!(best_pred > long_case_s) && bsel.size() * bprec.size() > 1) {
          std::vector<std::pair<std::string, std::string>> todo;
          for (const auto& s : order)
            for (const auto& prec : bprec) {
              const double ps = pred.count(s) ? pred[s] : -1;
              if (s != "auto" && ps > case_limit_s && best_pred >= 0 && ps > 1.15 * best_pred) continue;
              if (ps > long_case_s) continue;  // measured once below, on its own
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
              if (!sm.error.empty() ||
                  !(round < warmup + repeats || (sum < min_time_s && sm.totals.size() < 100)))
                continue;
              any = true;
              KnnParams p = base;
              p.select = key.first;
              p.precision = key.second;
              p.k = static_cast<int>(k);
              try {
                sm.last = KnnGraph{};
                const auto t0 = std::chrono::steady_clock::now();
                KnnGraph g = backend->build(view, p, progress);
                const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                std::vector<int64_t>().swap(g.indices);
                std::vector<float>().swap(g.distances);
                if (round >= warmup) {
                  sm.totals.push_back(wall);
                  for (auto& [st, t] : g.timings) sm.stages[st].push_back(t);
                }
                sm.last = std::move(g);
              } catch (const Cancelled&) {
                throw;
              } catch (const Error& e) {
                sm.error = e.what();
              }
            }
            if (!any) break;
          }
        }
        for (const auto& s : order)
        for (const auto& prec : bprec) {
          KnnParams p = base;
          p.select = s;
          p.precision = prec;
          p.k = static_cast<int>(k);
          nlohmann::json c;
          c["backend"] = b;
          c["select"] = s;
          c["precision"] = prec;
          c["n"] = view.rows();
          c["d"] = view.cols();
          c["k"] = p.k;
          c["metric"] = to_string(p.metric);
          const double ps = pred.count(s) ? pred[s] : -1;
          if (ps >= 0) c["predicted_s"] = ps;
          if (s != "auto" && ps > case_limit_s && best_pred >= 0 && ps > 1.15 * best_pred) {
            char why[160];
            std::snprintf(why, sizeof why, "predicted %.1f s > --case-limit-s %.0f and > 1.15 x the best prediction %.1f s",
                          ps, case_limit_s, best_pred);
            c["skipped"] = why;
            out["cases"].push_back(c);
            std::printf("%-6s %-8s %-8s %-10s %9lld %6lld %6d %-10s %12s  (skipped: %s)\n", b.c_str(), s.c_str(), "-",
                        prec.c_str(), static_cast<long long>(view.rows()), static_cast<long long>(view.cols()), p.k,
                        to_string(p.metric).c_str(), "-", why);
            continue;
          }
          if (s != "auto" && !auto_case.is_null() && auto_case.value("auto_pick", "") == s &&
              auto_case.value("precision", "") == prec) {
            // auto ran this strategy's code in this cell: its measurement stands for both.
            nlohmann::json same = auto_case;
            same["select"] = s;
            same["measured_as"] = "auto";
            out["cases"].push_back(same);
            const double med = same["median_wall_s"].get<double>();
            auto key = std::make_pair(view.rows(), k);
            if (!best.count(key) || med < best[key].first) best[key] = {med, s};
            std::printf("%-6s %-8s %-8s %-10s %9lld %6lld %6d %-10s %12.4f  (the auto run above)\n", b.c_str(),
                        s.c_str(), s.c_str(), prec.c_str(), static_cast<long long>(view.rows()),
                        static_cast<long long>(view.cols()), p.k, to_string(p.metric).c_str(), med);
            continue;
          }
          const bool long_case = ps > long_case_s;
          const int case_warmup = long_case ? 0 : warmup, case_repeats = long_case ? 1 : repeats;
          c["warmup"] = case_warmup;
          c["repeats"] = case_repeats;
          std::vector<double> totals;
          std::map<std::string, std::vector<double>> stages;
          KnnGraph last;
          try {
            double measured_s = 0;
            bool measured_already = false;
            if (auto it = interleaved.find({s, prec}); it != interleaved.end()) {
              measured_already = true;
              if (!it->second.error.empty()) throw Error(it->second.error);
              totals = std::move(it->second.totals);
              stages = std::move(it->second.stages);
              last = std::move(it->second.last);
              c["interleaved"] = true;
            }
            for (int r = 0; !measured_already && (r < case_warmup + case_repeats ||
                            (!long_case && measured_s < min_time_s && totals.size() < 100));
                 ++r) {
              last = KnnGraph{};  // the previous result's memory back before the next build
              auto t0 = std::chrono::steady_clock::now();
              last = backend->build(view, p, progress);
              double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              if (r < case_warmup) continue;
              totals.push_back(wall);
              measured_s += wall;
              for (auto& [st, t] : last.timings) stages[st].push_back(t);
            }
          } catch (const Cancelled&) {
            throw;
          } catch (const Error& e) {
            c["error"] = e.what();
            out["cases"].push_back(c);
            std::printf("%-6s %-8s %-8s %-10s %9lld %6lld %6d %-10s %12s  (%s)\n", b.c_str(), s.c_str(), "-",
                        prec.c_str(), static_cast<long long>(view.rows()), static_cast<long long>(view.cols()), p.k,
                        to_string(p.metric).c_str(), "-", e.what());
            continue;
          }
          const double med = median(totals);
          c["strategy"] = last.strategy;
          c["repeats"] = totals.size();
          c["wall_s"] = totals;
          c["median_wall_s"] = med;
          nlohmann::json st = nlohmann::json::object();
          for (auto& [name, v] : stages) st[name] = median(v);
          c["median_stage_s"] = st;
          c["extra"] = last.extra;
          std::string over = "-";
          std::string sel = "-";
          if (st.contains("select")) sel = std::to_string(st["select"].get<double>()).substr(0, 8);
          if (b == "gpu" && sgemm_tflops > 0) {
            // The float32 GEMM floor of the symmetric problem: N^2 d multiply-adds.
            const double flop = static_cast<double>(view.rows()) * static_cast<double>(view.rows()) *
                                static_cast<double>(view.cols());
            const double floor_s = flop / (sgemm_tflops * 1e12);
            c["sgemm_tflops"] = sgemm_tflops;
            c["floor_s"] = floor_s;
            c["over_floor"] = med / floor_s;
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.3f", med / floor_s);
            over = buf;
#ifdef MANIFOLD_HAVE_CUDA
            // cuBLAS alone on one tile of this case: how much of the gap is the
            // GEMM's own efficiency at this shape.
            if (last.extra.contains("tile_rows")) {
              const gpu::SgemmRate tr = gpu::measure_sgemm(gpu0, last.extra["tile_rows"].get<int64_t>(),
                                                           last.extra["tile_cols"].get<int64_t>(), view.cols(), 20);
              c["sgemm_tile_tflops"] = tr.tflops;
            }
#endif
          }
          if (last.extra.contains("auto_pick")) c["auto_pick"] = last.extra["auto_pick"];
          out["cases"].push_back(c);
          if (s == "auto") auto_case = c;
          // Written after every case, so a run cut short keeps what it measured.
          if (a.has("--json")) write_text_file(a.str("--json"), out.dump(2) + "\n");
          {
            const double loop = st.contains("distances+select") ? st["distances+select"].get<double>() : med;
            measured[{k, s}] = {view.rows(), med, std::min(loop, med)};
          }
          auto key = std::make_pair(view.rows(), k);
          if (s != "auto" && (!best.count(key) || med < best[key].first)) best[key] = {med, s};
          by_precision[{view.rows(), k, s}][prec] = med;
          char reeval[32] = "-";
          if (last.extra.contains("reevaluated_per_row"))
            std::snprintf(reeval, sizeof reeval, "%.1f", last.extra["reevaluated_per_row"].get<double>());
          std::printf("%-6s %-8s %-8s %-10s %9lld %6lld %6d %-10s %12.4f %10s %8s %9s\n", b.c_str(), s.c_str(),
                      last.strategy.c_str(), prec.c_str(), static_cast<long long>(view.rows()),
                      static_cast<long long>(view.cols()), p.k, to_string(p.metric).c_str(), med, sel.c_str(),
                      over.c_str(), reeval);
          std::fflush(stdout);
        }
      }
    }
  }
  if (selects.size() > 1) {
    nlohmann::json winners = nlohmann::json::array();
    std::printf("\nfastest strategy per (n, k):\n%9s %6s %-8s %12s\n", "n", "k", "select", "median_s");
    for (auto& [key, v] : best) {
      winners.push_back({{"n", key.first}, {"k", key.second}, {"select", v.second}, {"median_wall_s", v.first}});
      std::printf("%9lld %6lld %-8s %12.4f\n", static_cast<long long>(key.first), static_cast<long long>(key.second),
                  v.second.c_str(), v.first);
    }
    out["winners"] = winners;
  }
  if (precisions.size() > 1) {
    // Measured in this run, on the same data: exact time over fast-exact time.
    nlohmann::json ratios = nlohmann::json::array();
    for (auto& [key, m] : by_precision)
      if (m.count("exact") && m.count("fast-exact")) {
        const double r = m["exact"] / m["fast-exact"];
        ratios.push_back({{"n", std::get<0>(key)}, {"k", std::get<1>(key)}, {"select", std::get<2>(key)},
                          {"exact_s", m["exact"]}, {"fast_exact_s", m["fast-exact"]}, {"speedup", r}});
        std::printf("fast-exact speed-up n=%lld k=%lld: %.2fx\n", static_cast<long long>(std::get<0>(key)),
                    static_cast<long long>(std::get<1>(key)), r);
      }
    out["precision_speedup"] = ratios;
  }
  if (a.has("--json")) write_text_file(a.str("--json"), out.dump(2) + "\n");
  return 0;
}

}  // namespace manifold::cli
