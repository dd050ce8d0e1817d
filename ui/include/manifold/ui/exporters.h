#pragma once
// What the Export menu writes. Every file appears atomically (written under a
// temporary name, renamed when complete), like the CLI's outputs, and every
// failure is a manifold::Error with one line naming the file.
#include <QString>
#include <QStringList>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/diffusion_map.h"
#include "manifold/knn.h"
#include "manifold/ui/loaded_dataset.h"

namespace manifold::ui {

/// The graph directory of `manifold knn` (indices.npy, distances.npy,
/// graph.json) for the first `k` neighbours of `graph`. Like the CLI, it
/// refuses a folder holding other files unless `overwrite` (the user said
/// to replace its contents).
void exportGraphDirectory(const QString& dir, const KnnGraph& graph, int k, bool overwrite = false);
/// The files a graph folder holds, and an embedding folder.
const std::vector<std::string>& graphFolderFiles();
const std::vector<std::string>& embeddingFolderFiles();

/// The graph as a sparse N x N MatrixMarket coordinate matrix (1-based,
/// entry (i, j) = distance from i to its neighbour j), first `k` neighbours.
void exportGraphMatrixMarket(const QString& path, const KnnGraph& graph, int k);

/// Rows, columns and values of a MatrixMarket coordinate file (0-based).
struct SparseTriplets {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> i, j;
  std::vector<double> value;
};
SparseTriplets readMatrixMarket(const QString& path);

/// The embedding in the format the file name says: .npy (N' x M float64
/// coordinates; when only part of the graph was embedded, the input rows go
/// to <name>.point_index.npy beside it), .csv or .vtp. A path without one of
/// these suffixes is taken as a folder and receives every file of
/// `manifold embed` (a folder of other files only when `overwrite`).
/// `item_names` (one per graph point, may be null): the .csv and .vtp name
/// each point's file; `metadata` (columns of one value per graph point, may
/// be null): their columns and arrays, as `manifold run` writes both.
/// Returns the files written.
QStringList exportEmbedding(const QString& path, const DiffusionResult& result, const DiffusionParams& params,
                            const nlohmann::json& graph_metadata, bool overwrite = false,
                            const std::vector<std::string>* item_names = nullptr,
                            const MetadataTable* metadata = nullptr);
/// Whether `path` names an embedding folder rather than one file.
bool isEmbeddingFolderPath(const QString& path);

/// Dataset rows as int64 .npy.
void exportSelectionIndices(const QString& path, const std::vector<int64_t>& rows);
/// The selected images as a new float32 .npy: S x h x w for images, S x d for vectors.
void exportSelectionImages(const QString& path, const LoadedDataset& dataset, const std::vector<int64_t>& rows);

}  // namespace manifold::ui
