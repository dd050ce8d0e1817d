// What `manifold run` spends around the graph and the embedding at a given
// size: loading the input .npy (and touching every value, as the k-NN build
// does), writing the graph's .npy files, the embedding's .npy, CSV and VTP,
// the folder commit, and reading a graph folder back (what `embed` loads).
// Each step runs --repeats times on synthetic data of the shapes `run`
// writes; the medians go to --json. Built and run by bench/io/run.sh.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/dataset.h"
#include "manifold/embedding_io.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/parallel.h"

namespace fs = std::filesystem;
using namespace manifold;

namespace {

using Clock = std::chrono::steady_clock;

/// CPU seconds (user + system) of every thread of the process so far.
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// Drops `path` from the page cache (clean pages only; no privileges needed),
/// so the next read comes from the disk.
bool drop_from_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ::fdatasync(fd);
  const bool ok = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

struct Options {
  int64_t n = 1000000, d = 128;
  int k = 20, m = 10, repeats = 5;
  std::string dir = (fs::temp_directory_path() / "manifold-bench-io").string(), json;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "-n") o.n = std::stoll(v);
    else if (a == "-d")
      o.d = std::stoll(v);
    else if (a == "-k")
      o.k = std::stoi(v);
    else if (a == "-m")
      o.m = std::stoi(v);
    else if (a == "--repeats")
      o.repeats = std::stoi(v);
    else if (a == "--dir")
      o.dir = v;
    else if (a == "--json")
      o.json = v;
    else {
      std::fprintf(stderr, "bench_io: unknown option %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

/// The input: N x d float32 at `data`, written once and kept for later runs
/// (then `rng` is not drawn from).
void ensure_input(const Options& o, const std::string& data, std::mt19937_64& rng) {
  if (fs::exists(data) && npy::read_header(data).shape == std::vector<int64_t>{o.n, o.d}) return;
  std::vector<float> x(static_cast<size_t>(o.n * o.d));
  std::normal_distribution<float> g;
  for (auto& v : x) v = g(rng);
  npy::write(data, x.data(), {o.n, o.d});
}

/// A graph of the shape run writes: random neighbours, ascending distances.
KnnGraph synthetic_graph(const Options& o, std::mt19937_64& rng) {
  KnnGraph graph;
  graph.n = o.n;
  graph.d = o.d;
  graph.k = o.k;
  graph.backend = "bench";
  graph.indices.resize(static_cast<size_t>(o.n * o.k));
  graph.distances.resize(graph.indices.size());
  std::uniform_int_distribution<int64_t> row(0, o.n - 1);
  std::uniform_real_distribution<float> dist(1.f, 2.f);
  for (int64_t i = 0; i < o.n; ++i) {
    float last = 0;
    for (int j = 0; j < o.k; ++j) {
      graph.indices[static_cast<size_t>(i * o.k + j)] = row(rng);
      last += dist(rng) * 0.01f;
      graph.distances[static_cast<size_t>(i * o.k + j)] = last;
    }
  }
  return graph;
}

/// An embedding of the shape run writes; its diffusion coordinates carry all
/// 17 digits, as a solver's do.
DiffusionResult synthetic_embedding(const Options& o, std::mt19937_64& rng) {
  DiffusionResult r;
  r.n = o.n;
  r.m = o.m;
  r.k = o.k;
  r.graph_points = o.n;
  r.coordinates.resize(static_cast<size_t>(o.n * o.m));
  std::normal_distribution<double> coordinate(0, 1e-3);
  for (auto& v : r.coordinates) v = coordinate(rng);
  r.point_index.resize(static_cast<size_t>(o.n));
  for (int64_t i = 0; i < o.n; ++i) r.point_index[static_cast<size_t>(i)] = i;
  r.eigenvalues.assign(static_cast<size_t>(o.m + 1), 0.5);
  r.eigenvalues[0] = 1;
  return r;
}

/// Runs each step `repeats` times and keeps its wall and CPU medians in
/// `results` (and the size of the file it wrote), one line each on stdout.
struct StepTimer {
  int repeats = 0;
  nlohmann::json results = nlohmann::json::object();

  void time(const std::string& what, const std::function<void()>& before, const std::function<void()>& step,
            const std::string& size_of = "") {
    std::vector<double> runs, cpu;
    for (int i = 0; i < repeats; ++i) {
      if (before) before();
      const auto t = Clock::now();
      const double c = cpu_seconds();
      step();
      cpu.push_back(cpu_seconds() - c);
      runs.push_back(std::chrono::duration<double>(Clock::now() - t).count());
    }
    // CPU seconds beside the wall: on a shared machine the wall time
    // depends on the others' load, the CPU time much less.
    nlohmann::json j = {{"median_s", median(runs)}, {"runs_s", runs}, {"cpu_median_s", median(cpu)}};
    if (!size_of.empty()) j["bytes"] = fs::file_size(size_of);
    results[what] = j;
    std::printf("%-26s median %8.3f s, CPU %8.3f s%s\n", what.c_str(), median(runs), median(cpu),
                size_of.empty() ? "" : ("  (" + std::to_string(fs::file_size(size_of) >> 20) + " MiB)").c_str());
    std::fflush(stdout);
  }
};

/// Loading: the reader, then one value of every page read (what the k-NN
/// build's first pass over a memory-mapped file pays beyond its arithmetic:
/// the page faults, and the disk reads when the file is not cached); cold
/// when the page cache lets go of the file. Returns whether it did.
bool time_loads(StepTimer& timer, const std::string& data, double& sink) {
  auto load_and_touch = [&] {
    Dataset ds = load_dataset(data);
    const int64_t values = ds.rows() * ds.cols(), per_page = 4096 / sizeof(float);
    std::vector<float> firsts(static_cast<size_t>((values + per_page - 1) / per_page));
    parallel_for(0, static_cast<int64_t>(firsts.size()), 0,
                 [&](int64_t p) { firsts[static_cast<size_t>(p)] = ds.data()[p * per_page]; });
    for (float v : firsts) sink += v;
  };
  timer.time("load_warm", nullptr, load_and_touch);
  const bool cold = drop_from_cache(data);
  if (cold)
    timer.time(
        "load_cold", [&] { drop_from_cache(data); }, load_and_touch);
  return cold;
}

/// Each output file of run on its own, into `scratch`.
void time_output_files(StepTimer& timer, const fs::path& scratch, const KnnGraph& graph, const DiffusionResult& r) {
  const auto names = coordinate_names(r.m);
  auto file = [&](const char* name) { return (scratch / name).string(); };
  timer.time(
      "write_indices_npy", nullptr,
      [&] {
    npy::write(file("indices.npy"), graph.indices.data(), {graph.n, graph.k});
      },
      file("indices.npy"));
  timer.time(
      "write_distances_npy", nullptr,
      [&] {
    npy::write(file("distances.npy"), graph.distances.data(), {graph.n, graph.k});
      },
      file("distances.npy"));
  timer.time(
      "write_embedding_npy", nullptr,
      [&] {
    npy::write(file("embedding.npy"), r.coordinates.data(), {r.n, r.m});
      },
      file("embedding.npy"));
  timer.time(
      "write_point_index_npy", nullptr, [&] { npy::write(file("point_index.npy"), r.point_index.data(), {r.n}); },
      file("point_index.npy"));
  timer.time(
      "write_csv", nullptr,
      [&] { write_csv(file("embedding.csv"), r.n, r.m, r.coordinates.data(), r.point_index.data(), names); },
      file("embedding.csv"));
  timer.time(
      "write_vtp", nullptr,
      [&] { write_vtp(file("embedding.vtp"), r.n, r.m, r.coordinates.data(), r.point_index.data(), names); },
      file("embedding.vtp"));
}

/// The whole result folder as run writes it, then its commit over the
/// previous result (the swap and the removal of the old files).
void time_result_folder(StepTimer& timer, const std::string& result, const KnnGraph& graph, const DiffusionResult& r) {
  fs::remove_all(result);
  DiffusionParams params;
  auto write_all = [&](OutputTransaction& tx) {
    npy::write(tx.path("indices.npy"), graph.indices.data(), {graph.n, graph.k});
    npy::write(tx.path("distances.npy"), graph.distances.data(), {graph.n, graph.k});
    write_text_file(tx.path("graph.json"), graph_metadata(graph).dump(2) + "\n");
    write_embedding_files(tx, r, params, graph_metadata(graph));
  };
  {
    OutputTransaction tx(result);
    write_all(tx);
    tx.commit();
  }
  std::vector<double> all_runs, commit_runs;
  for (int i = 0; i < timer.repeats; ++i) {
    const auto t0 = Clock::now();
    OutputTransaction tx(result);
    write_all(tx);
    const auto t1 = Clock::now();
    tx.commit();
    const auto t2 = Clock::now();
    all_runs.push_back(std::chrono::duration<double>(t2 - t0).count());
    commit_runs.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  timer.results["write_result_folder"] = {{"median_s", median(all_runs)}, {"runs_s", all_runs}};
  timer.results["commit_over_previous"] = {{"median_s", median(commit_runs)}, {"runs_s", commit_runs}};
  std::printf("%-26s median %8.3f s\n%-26s median %8.3f s\n", "write_result_folder", median(all_runs),
              "commit_over_previous", median(commit_runs));
}

/// What a durable commit would add (one fsync per file of the result), and
/// reading the graph folder back (what embed loads).
void time_fsync_and_read(StepTimer& timer, const std::string& result, double& sink) {
  timer.time("fsync_result_files", nullptr, [&] {
    for (const auto& e : fs::directory_iterator(result)) {
      const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) ::fsync(fd), ::close(fd);
    }
  });
  timer.time("read_graph", nullptr, [&] {
    KnnGraph g = read_graph(result);
    sink += static_cast<double>(g.indices[0]);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  fs::create_directories(o.dir);
  const std::string data = (fs::path(o.dir) / "data.npy").string();
  std::mt19937_64 rng(1);
  ensure_input(o, data, rng);
  const KnnGraph graph = synthetic_graph(o, rng);
  const DiffusionResult r = synthetic_embedding(o, rng);

  const fs::path scratch = fs::path(o.dir) / "out";
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  const std::string result = (fs::path(o.dir) / "result").string();
  StepTimer timer;
  timer.repeats = o.repeats;
  double sink = 0;  // reads the values loaded, so the compiler cannot drop the loads
  const bool cold = time_loads(timer, data, sink);
  time_output_files(timer, scratch, graph, r);
  time_result_folder(timer, result, graph, r);
  time_fsync_and_read(timer, result, sink);

  nlohmann::json out = {{"n", o.n},
                        {"d", o.d},
                        {"k", o.k},
                        {"m", o.m},
                        {"repeats", o.repeats},
                        {"threads", hardware_threads()},
                        {"page_cache_dropped_for_cold_load", cold},
                        {"steps", timer.results}};
  if (!o.json.empty()) write_text_file(o.json, out.dump(2) + "\n");
  fs::remove_all(scratch);
  fs::remove_all(result);
  return sink == 12345.678 ? 1 : 0;
}
