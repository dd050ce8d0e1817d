#pragma once
// A results folder: what `manifold run` (session.json, graph, embedding) or
// `manifold knn` (graph.json + indices.npy, with the data, HDF5 dataset and
// mask recorded in graph.json's "extra") wrote. Results are often built on a
// GPU machine and explored elsewhere: the data and mask they record are
// found where they were, or by name in the folder or the folder above it.
#include <string>
#include <vector>

#include "manifold/session.h"

namespace manifold {

/// Whether `path` is a folder `run` or `knn` wrote (a session.json, or a
/// graph.json beside indices.npy).
bool is_results_folder(const std::string& path);

struct ResultsFolder {
  /// The session the folder stands for: its session.json, or one made from
  /// graph.json (data, HDF5 dataset, mask, metric, k, self rule; the
  /// embedding's k the graph's), with the data and mask where they were found.
  Session session;
  std::vector<std::string> moved;    ///< files found beside the folder, not at their recorded paths
  std::vector<std::string> missing;  ///< recorded files found nowhere (left as recorded in `session`)
};

/// A file a results folder records (its data, its mask): `recorded` where
/// it is, else the file of its name in `folder` or the folder above it
/// (results moved from the machine that made them); "" when it is in none.
std::string find_recorded_file(const std::string& recorded, const std::string& folder);

/// Reads a results folder's session (above). A graph.json that names no
/// data gives an empty session.data. Throws Error naming the file for a
/// session.json or graph.json that cannot be read, or a graph.json whose k
/// is not positive.
ResultsFolder read_results_folder(const std::string& dir);

}  // namespace manifold
