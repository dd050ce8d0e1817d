// The table behind `--select auto`, measured on one NVIDIA H200 and, for
// the large-k grid with the engine's prior bound, one H100 (d = 256, random
// normal data, one GPU for every strategy; bench/gpu/select/RESULTS.md): six
// runs kept in bench/gpu/select/auto_table_inputs/ (1M: a grid run of every
// strategy and an auto run; 100k: one run, a large-k grid with the papers'
// strategies through the engine's tile loop and one with the prior bound;
// 10k: one run). Per cell, the
// strategy whose worst median total over those runs, relative to that run's
// best, is smallest (make_table.py writes
// the rows between the markers). Since the result's pages are faulted in as
// huge pages (KnnGraph::allocate_result), the engine's pipeline is the
// fastest or within the runs' noise almost everywhere. Cells are looked up by
// the nearest measured N and k on a log scale; MANIFOLD_SELECT_TABLE
// replaces the table (auto_table.h).
#include "select/auto_table.h"

#include "manifold/gpu/gpu_knn_backend.h"

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "manifold/error.h"
#include "settings.h"

namespace manifold::gpu::select {

namespace {

constexpr int64_t kNs[] = {10000, 100000, 1000000};
constexpr int kKs[] = {1, 16, 128, 1024, 4096};

// kBest[n bucket][k bucket]; k = 1, 16, 128, 1024, 4096. The rows between
// the markers are written by `bench/gpu/select/make_table.py
// --write-auto-table` from the runs in bench/gpu/select/auto_table_inputs/.
const char* const kBest[3][5] = {
    // BEGIN kBest
    {"warp", "warp", "warp", "sort", "quick"},  // N = 10000
    {"warp", "warp", "warp", "warp", "warp"},   // N = 100000
    {"warp", "warp", "warp", "warp", "merge"},  // N = 1000000
                                                // END kBest
};

struct Table {
  std::vector<int64_t> ns;
  std::vector<int> ks;
  std::vector<std::vector<Select>> best;  // [n bucket][k bucket]
};

/// A table's strategy by name: any but auto; nullopt for another word.
std::optional<Select> table_strategy(const std::string& name) {
  for (Select s : kSelects)
    if (s != Select::Auto && name == to_string(s)) return s;
  return std::nullopt;
}

Table builtin() {
  Table t;
  t.ns.assign(std::begin(kNs), std::end(kNs));
  t.ks.assign(std::begin(kKs), std::end(kKs));
  for (auto& row : kBest) {
    t.best.emplace_back();
    for (const char* name : row) t.best.back().push_back(*table_strategy(name));
  }
  return t;
}

Table parse(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("MANIFOLD_SELECT_TABLE=" + path + ": cannot read the file");
  Table t;
  std::string line;
  int lineno = 0;
  auto fail = [&](const std::string& why) {
    throw Error("MANIFOLD_SELECT_TABLE=" + path + ": line " + std::to_string(lineno) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string head;
    if (!(ls >> head)) continue;
    std::vector<std::string> words;
    for (std::string w; ls >> w;) words.push_back(w);
    if (head == "k") {
      if (!t.ks.empty()) fail("a second 'k' line");
      for (auto& w : words) {
        char* end = nullptr;
        const long v = std::strtol(w.c_str(), &end, 10);
        if (*end || v < 1 || (!t.ks.empty() && v <= t.ks.back())) fail("k values must be increasing integers >= 1");
        t.ks.push_back(static_cast<int>(v));
      }
      if (t.ks.empty()) fail("no k values");
      continue;
    }
    if (t.ks.empty()) fail("the 'k K1 K2 ...' line must come first");
    char* end = nullptr;
    const long long n = std::strtoll(head.c_str(), &end, 10);
    if (*end || n < 1 || (!t.ns.empty() && n <= t.ns.back())) fail("N values must be increasing integers >= 1");
    if (words.size() != t.ks.size())
      fail(std::to_string(words.size()) + " strategies for " + std::to_string(t.ks.size()) + " k values");
    std::vector<Select> row;
    for (auto& w : words) {
      const std::optional<Select> s = table_strategy(w);
      if (!s) fail("unknown strategy '" + w + "' (warp, merge, quick, sort, heap, bitonic)");
      row.push_back(*s);
    }
    t.ns.push_back(n);
    t.best.push_back(row);
  }
  if (t.ns.empty()) fail("no 'N S1 S2 ...' rows");
  return t;
}

const Table& table() {
  static std::mutex m;
  static Table t;
  static std::string loaded_from;
  static bool loaded = false;
  std::lock_guard lock(m);
  const std::string& path = settings().select_table;
  if (!loaded || path != loaded_from) {
    t = path.empty() ? builtin() : parse(path);
    loaded_from = path;
    loaded = true;
  }
  return t;
}

template <class T>
size_t nearest_log(const std::vector<T>& grid, double v) {
  size_t best = 0;
  for (size_t i = 1; i < grid.size(); ++i)
    if (std::fabs(std::log(v / static_cast<double>(grid[i]))) <
        std::fabs(std::log(v / static_cast<double>(grid[best]))))
      best = i;
  return best;
}

}  // namespace

Select best_strategy(int64_t n, int k, int devices) {
  // The papers' strategies run on one GPU.
  if (devices > 1) return Select::Warp;
  const Table& t = table();
  Select s = t.best[nearest_log(t.ns, static_cast<double>(n < 1 ? 1 : n))][nearest_log(t.ks, k < 1 ? 1 : k)];
  // Beyond the measured k, a strategy must still support k: bitonic holds a
  // row's k + slack candidates in one block's shared memory (up to ~7000 on
  // an H200). The backend also takes the engine when a pick refuses.
  if (s == Select::Bitonic && k > 4096) s = Select::Warp;
  return s;
}

std::string table_text() {
  const Table& t = table();
  std::string out = "k";
  for (int k : t.ks) out += " " + std::to_string(k);
  out += "\n";
  for (size_t i = 0; i < t.ns.size(); ++i) {
    out += std::to_string(t.ns[i]);
    for (Select s : t.best[i]) out += " " + to_string(s);
    out += "\n";
  }
  return out;
}

}  // namespace manifold::gpu::select

namespace manifold::gpu {
std::string select_table_text() { return select::table_text(); }
}  // namespace manifold::gpu
