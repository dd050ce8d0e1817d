#pragma once
// The graph directory: indices.npy (int64 N x k), distances.npy (float32
// N x k) and graph.json. Writing is all-or-nothing.
#include <string>

#include "manifold/knn.h"
#include "manifold/output.h"

namespace manifold {

/// Writes the three files into `dir` (created if missing). Files are written
/// under temporary names and renamed only when all are complete.
void write_graph(const std::string& dir, const KnnGraph& graph);
/// Starts writing the three files into an open transaction, each as a file
/// of `step` (so `run` writes the graph while it computes the embedding).
/// `graph` must stay unchanged until `writes` has been waited for.
void start_graph_writes(ParallelWrites& writes, OutputTransaction& tx, const KnnGraph& graph, const std::string& step);
/// Reads a graph directory back; checks that the files agree in shape and that
/// every index is in range. Throws Error naming the file.
KnnGraph read_graph(const std::string& dir);
/// graph.json alone, as read_graph reads it (no arrays): n and k where it
/// gives them (else -1), d, metric, self rule, fingerprint, extra (the
/// data and mask `knn` records). Throws Error naming the file.
KnnGraph read_graph_metadata(const std::string& dir);
/// graph.json as written by write_graph.
nlohmann::json graph_metadata(const KnnGraph& graph);

}  // namespace manifold
