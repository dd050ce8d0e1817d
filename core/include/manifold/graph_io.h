#pragma once
// The graph directory: indices.npy (int64 N x k), distances.npy (float32
// N x k) and graph.json. Writing is all-or-nothing.
#include <string>

#include "manifold/knn.h"

namespace manifold {

/// Writes the three files into `dir` (created if missing). Files are written
/// under temporary names and renamed only when all are complete.
void write_graph(const std::string& dir, const KnnGraph& graph);
/// Reads a graph directory back; checks that the files agree in shape and that
/// every index is in range. Throws Error naming the file.
KnnGraph read_graph(const std::string& dir);
/// graph.json as written by write_graph.
nlohmann::json graph_metadata(const KnnGraph& graph);

}  // namespace manifold
