#include "manifold/graph_io.h"

#include <filesystem>
#include <fstream>
#include <future>
#include <limits>

#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/output.h"

namespace fs = std::filesystem;

namespace manifold {

nlohmann::json graph_metadata(const KnnGraph& g) {
  nlohmann::json j;
  j["format"] = "manifold-knn-graph";
  j["version"] = 1;
  j["n"] = g.n;
  j["d"] = g.d;
  j["k"] = g.k;
  j["metric"] = to_string(g.metric);
  j["keep_self"] = g.keep_self;
  j["backend"] = g.backend;
  j["strategy"] = g.strategy;
  j["fingerprint"] = g.fingerprint;
  j["distance"] = g.metric == Metric::Euclidean ? "||x-y||" : (g.metric == Metric::Cosine ? "1-cos" : "1-r");
  nlohmann::json t = nlohmann::json::object();
  for (auto& [stage, seconds] : g.timings) t[stage] = seconds;
  j["timings_s"] = t;
  j["extra"] = g.extra;
  return j;
}

void start_graph_writes(ParallelWrites& writes, OutputTransaction& tx, const KnnGraph& g, const std::string& step) {
  // The paths are taken here: the transaction is not shared between threads.
  const std::string indices = tx.path("indices.npy"), distances = tx.path("distances.npy"),
                    json = tx.path("graph.json");
  writes.start(step, "indices.npy", [&g, indices] { npy::write(indices, g.indices.data(), {g.n, g.k}); });
  writes.start(step, "distances.npy", [&g, distances] { npy::write(distances, g.distances.data(), {g.n, g.k}); });
  writes.start(step, "graph.json", [&g, json] { write_text_file(json, graph_metadata(g).dump(2) + "\n"); });
}

void write_graph(const std::string& dir, const KnnGraph& g) {
  OutputTransaction tx(dir);
  ParallelWrites writes;
  start_graph_writes(writes, tx, g, "write graph");
  writes.wait();
  tx.commit();
}

KnnGraph read_graph_metadata(const std::string& dir) {
  const std::string jpath = (fs::path(dir) / "graph.json").string();
  nlohmann::json j;
  try {
    std::ifstream in(jpath);
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(jpath + ": not valid JSON");
  }
  KnnGraph g;
  g.n = -1, g.k = -1;
  try {
    // n and k, where given, must be counts (a float such as 1e30 is not one).
    for (const char* key : {"n", "k"})
      if (j.contains(key) && !(j[key].is_number_integer() && j[key].get<int64_t>() >= 0 &&
                               j[key].get<int64_t>() <= std::numeric_limits<int>::max()))
        throw Error(jpath + ": \"" + key + "\" must be a count");
    g.n = j.value("n", int64_t{-1});
    g.k = j.value("k", -1);
    g.d = j.value("d", int64_t{0});
    // The metric comes from the file, not from an option: name the file.
    const std::string metric = j.value("metric", std::string("euclidean"));
    try {
      g.metric = parse_metric(metric);
    } catch (const Error&) {
      throw Error(jpath + ": unknown metric '" + metric + "' (euclidean, cosine, pearson)");
    }
    g.keep_self = j.value("keep_self", false);
    g.backend = j.value("backend", std::string());
    g.strategy = j.value("strategy", std::string());
    g.fingerprint = j.value("fingerprint", std::string());
    if (j.contains("timings_s"))
      for (auto& [k, v] : j["timings_s"].items()) g.timings.emplace_back(k, v.get<double>());
    if (j.contains("extra")) g.extra = j["extra"];
  } catch (const nlohmann::json::exception&) {
    throw Error(jpath + ": malformed graph metadata");
  }
  return g;
}

KnnGraph read_graph(const std::string& dir) {
  const std::string ipath = (fs::path(dir) / "indices.npy").string();
  const std::string dpath = (fs::path(dir) / "distances.npy").string();
  const std::string jpath = (fs::path(dir) / "graph.json").string();
  if (!fs::is_directory(dir)) throw Error(dir + ": not a graph directory (missing)");
  for (auto& p : {ipath, dpath, jpath})
    if (!fs::exists(p)) throw Error(p + ": missing (not a graph directory written by manifold knn?)");
  KnnGraph g = read_graph_metadata(dir);
  // The two arrays are read at the same time; an error in indices.npy is
  // the one reported first (the future's destructor waits for the other read).
  std::vector<int64_t> ishape, dshape;
  auto distances = std::async(std::launch::async,
                              [&] { return npy::read<float, DefaultInitAllocator<float>>(dpath, &dshape); });
  g.indices = npy::read<int64_t, DefaultInitAllocator<int64_t>>(ipath, &ishape);
  g.distances = distances.get();
  if (ishape.size() != 2) throw Error(ipath + ": expected a 2-D array");
  if (dshape != ishape) throw Error(dpath + ": shape does not match indices.npy");
  if ((g.n >= 0 && g.n != ishape[0]) || (g.k >= 0 && g.k != ishape[1]))
    throw Error(jpath + ": n/k disagree with indices.npy");
  g.n = ishape[0];
  g.k = static_cast<int>(ishape[1]);
  for (int64_t i = 0; i < g.n * g.k; ++i) {
    if (g.indices[i] < 0 || g.indices[i] >= g.n)
      throw Error(ipath + ": index " + std::to_string(g.indices[i]) + " at row " + std::to_string(i / g.k) +
                  " is out of range for " + std::to_string(g.n) + " points");
    if (!(g.distances[i] >= 0)) throw Error(dpath + ": negative or NaN distance at row " + std::to_string(i / g.k));
  }
  return g;
}

}  // namespace manifold
