#include "manifold/ui/exporters.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/output.h"

namespace fs = std::filesystem;

namespace manifold::ui {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw Error(path + ": " + what); }

std::string temp_beside(const std::string& path) {
  const fs::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".partial")).string();
}

bool has_suffix(const QString& path, const char* suffix) { return path.endsWith(suffix, Qt::CaseInsensitive); }

}  // namespace

const std::vector<std::string>& graphFolderFiles() {
  static const std::vector<std::string> files{"indices.npy", "distances.npy", "graph.json"};
  return files;
}

const std::vector<std::string>& embeddingFolderFiles() {
  static const std::vector<std::string> files{"eigenvalues.npy", "embedding.npy", "point_index.npy",
                                              "embedding.csv",   "embedding.vtp", "embedding.json"};
  return files;
}

// write_graph's files, in a transaction that may replace a folder of other files.
void exportGraphDirectory(const QString& dir, const KnnGraph& graph, int k, bool overwrite) {
  if (k < 1 || k > graph.k) k = graph.k;
  std::optional<KnnGraph> sliced;
  if (k != graph.k) sliced = graph.sliced(k);
  const KnnGraph& g = sliced ? *sliced : graph;
  OutputTransaction tx(dir.toStdString(), {.overwrite = overwrite});
  npy::write(tx.path("indices.npy"), g.indices.data(), {g.n, g.k});
  npy::write(tx.path("distances.npy"), g.distances.data(), {g.n, g.k});
  write_text_file(tx.path("graph.json"), graph_metadata(g).dump(2) + "\n");
  tx.commit();
}

void exportGraphMatrixMarket(const QString& qpath, const KnnGraph& graph, int k) {
  if (k < 1 || k > graph.k) k = graph.k;
  const std::string path = qpath.toStdString();
  const std::string tmp = temp_beside(path);
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) fail(path, std::string("cannot write (") + std::strerror(errno) + ")");
  int64_t nnz = 0;
  for (int64_t i = 0; i < graph.n; ++i)
    for (int c = 0; c < k; ++c) nnz += graph.row_indices(i)[c] >= 0;
  bool ok = std::fprintf(f,
                         "%%%%MatrixMarket matrix coordinate real general\n"
                         "%% exact k-nearest-neighbour graph from Manifold Explorer\n"
                         "%% entry (i, j): %s distance from point i to its neighbour j (1-based); k = %d\n"
                         "%lld %lld %lld\n",
                         to_string(graph.metric).c_str(), k, static_cast<long long>(graph.n),
                         static_cast<long long>(graph.n), static_cast<long long>(nnz)) > 0;
  for (int64_t i = 0; ok && i < graph.n; ++i) {
    const int64_t* idx = graph.row_indices(i);
    const float* dist = graph.row_distances(i);
    for (int c = 0; c < k; ++c)
      if (idx[c] >= 0)
        ok = ok && std::fprintf(f, "%lld %lld %.9g\n", static_cast<long long>(i + 1),
                                static_cast<long long>(idx[c] + 1), static_cast<double>(dist[c])) > 0;
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    fail(path, "write failed (disk full?)");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail(path, "cannot rename into place (" + ec.message() + ")");
  }
}

SparseTriplets readMatrixMarket(const QString& qpath) {
  const std::string path = qpath.toStdString();
  std::ifstream in(path);
  if (!in) fail(path, "cannot open");
  std::string line;
  if (!std::getline(in, line) || line.rfind("%%MatrixMarket matrix coordinate", 0) != 0)
    fail(path, "not a MatrixMarket coordinate file");
  while (std::getline(in, line) && !line.empty() && line[0] == '%') {
  }
  SparseTriplets t;
  long long nnz = 0;
  {
    std::istringstream head(line);
    long long r = 0, c = 0;
    if (!(head >> r >> c >> nnz)) fail(path, "bad size line");
    t.rows = r;
    t.cols = c;
  }
  t.i.reserve(static_cast<size_t>(nnz));
  t.j.reserve(static_cast<size_t>(nnz));
  t.value.reserve(static_cast<size_t>(nnz));
  long long i = 0, j = 0;
  double v = 0;
  while (in >> i >> j >> v) {
    t.i.push_back(i - 1);
    t.j.push_back(j - 1);
    t.value.push_back(v);
  }
  if (static_cast<long long>(t.value.size()) != nnz)
    fail(path, "holds " + std::to_string(t.value.size()) + " entries, the header says " + std::to_string(nnz));
  return t;
}

bool isEmbeddingFolderPath(const QString& path) {
  return !has_suffix(path, ".npy") && !has_suffix(path, ".csv") && !has_suffix(path, ".vtp");
}

QStringList exportEmbedding(const QString& path, const DiffusionResult& r, const DiffusionParams& params,
                            const nlohmann::json& graph_metadata, bool overwrite,
                            const std::vector<std::string>* item_names, const MetadataTable* metadata) {
  const std::string p = path.toStdString();
  const auto names = coordinate_names(r.m);
  bool identity = static_cast<int64_t>(r.point_index.size()) == r.n;
  for (int64_t i = 0; identity && i < r.n; ++i) identity = r.point_index[static_cast<size_t>(i)] == i;
  if (has_suffix(path, ".npy")) {
    npy::write(p, r.coordinates.data(), {r.n, r.m});
    QStringList files{path};
    if (!identity) {
      const QString index_path = path.left(path.size() - 4) + ".point_index.npy";
      npy::write(index_path.toStdString(), r.point_index.data(), {r.n});
      files << index_path;
    }
    return files;
  }
  if (has_suffix(path, ".csv")) {
    write_csv(p, r.n, r.m, r.coordinates.data(), r.point_index.data(), names, metadata, item_names);
    return {path};
  }
  if (has_suffix(path, ".vtp")) {
    write_vtp(p, r.n, r.m, r.coordinates.data(), r.point_index.data(), names, metadata, item_names);
    return {path};
  }
  // The embedding keeps a graph already in the folder only if it is its own.
  OutputTransaction tx(p, {.overwrite = overwrite}, SourceGraph::in_memory(graph_metadata));
  write_embedding_files(tx, r, params, graph_metadata, nullptr, metadata, item_names);
  tx.commit();
  QStringList files;
  for (const auto& f : embeddingFolderFiles()) files << path + "/" + QString::fromStdString(f);
  return files;
}

void exportSelectionIndices(const QString& path, const std::vector<int64_t>& rows) {
  if (rows.empty()) throw Error(path.toStdString() + ": the selection is empty; select points first");
  npy::write(path.toStdString(), rows.data(), {static_cast<int64_t>(rows.size())});
}

void exportSelectionImages(const QString& path, const LoadedDataset& ds, const std::vector<int64_t>& rows) {
  if (rows.empty()) throw Error(path.toStdString() + ": the selection is empty; select points first");
  const int64_t d = ds.data.cols();
  std::vector<float> out(rows.size() * static_cast<size_t>(d));
  for (size_t s = 0; s < rows.size(); ++s) {
    if (rows[s] < 0 || rows[s] >= ds.rows())
      throw Error(path.toStdString() + ": row " + std::to_string(rows[s]) + " is not in the dataset");
    std::memcpy(out.data() + s * d, ds.data.row(rows[s]), static_cast<size_t>(d) * sizeof(float));
  }
  std::vector<int64_t> shape{static_cast<int64_t>(rows.size())};
  if (ds.data.item_shape.size() >= 2 && static_cast<int64_t>(ds.image_height) * ds.image_width == d) {
    shape.push_back(ds.image_height);
    shape.push_back(ds.image_width);
  } else {
    shape.push_back(d);
  }
  npy::write(path.toStdString(), out.data(), shape);
}

}  // namespace manifold::ui
