#pragma once
// The embedding directory written by `manifold embed` / `run`:
//   eigenvalues.npy   float64 (M+1)      descending, the trivial 1 first
//   embedding.npy     float64 N' x M     diffusion coordinates lambda_i^t psi_i
//   point_index.npy   int64   N'         input row of each embedded point
//                                        (0..N-1 unless the graph was disconnected)
//   embedding.csv     "index,dc1,...,dcM" one line per embedded point, each
//                     number in its shortest form that reads back exactly
//                     (std::to_chars), then one column per metadata column
//                     (value of the row `index` in the same form, a
//                     category's name quoted as RFC 4180 when needed, empty
//                     when missing), then, where the input's rows have
//                     names (Dataset::item_names: an image folder's files),
//                     a last column "file" with the row's name, quoted as
//                     RFC 4180 when needed
//   embedding.vtp     VTK XML PolyData: one vertex per point at (dc1, dc2, dc3)
//                     (0 for missing axes), point-data arrays dc1..dcM (Float64)
//                     and index (Int64), and per metadata column a point-data
//                     array of that name: Float64 (numeric, angle; NaN when
//                     missing) or Int32 category codes (-1 missing) with the
//                     names as a String field-data array NAME_categories,
//                     and with named rows a String point-data array "file";
//                     inline base64 binary, readable by ParaView and
//                     vtkXMLPolyDataReader
//   embedding.json    format "manifold-embedding" version 1: every parameter,
//                     the epsilon used and its rule, components found, points
//                     embedded, eigenvalues, solver facts, timings, the BGH
//                     curve (epsilon = auto), the graph's metadata, with
//                     metadata "metadata_correlation" (correlation_json()),
//                     "command_timings_s": wall seconds of the command's
//                     steps up to writing this file (loading, the graph, the
//                     embedding, each output; they add up to the command's
//                     wall time), and "output_files_s": each file's own
//                     write time (files are written at the same time, so
//                     these overlap; run adds the graph's files)
// All files appear together or not at all (OutputTransaction).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/diffusion_map.h"
#include "manifold/metadata.h"
#include "manifold/output.h"

namespace manifold {

/// embedding.json for a result. `graph` is the graph's metadata (graph.json), may be null.
nlohmann::json embedding_metadata(const DiffusionResult& result, const DiffusionParams& params,
                                  const nlohmann::json& graph = nullptr);

/// Adds the six embedding files to an open transaction (so `run` can commit
/// graph and embedding together). `extra` is merged into embedding.json.
/// `metadata` (rows = the input's rows, may be null or empty) adds its
/// columns to embedding.csv and embedding.vtp, row point_index[e] for point e,
/// and its correlation with psi (metadata_correlations()) to embedding.json;
/// `item_names` (one per input row, may be null or empty) adds the "file"
/// column and array. A metadata column named "index", "file" (with names)
/// or like a coordinate is written as NAME_2.
/// The .npy files, the CSV and the VTP are written at the same time
/// (ParallelWrites) while the correlation is computed. The seconds of its
/// steps ("metadata correlation", then the wait for "write embedding .npy",
/// "write CSV" and "write VTP" in turn, see ParallelWrites::Seconds) are
/// added to embedding.json's "command_timings_s" (after those `extra` gives
/// there) and, with "write embedding.json", to `steps`; each file's own
/// seconds to its "output_files_s" (after those `extra` gives there).
void write_embedding_files(OutputTransaction& tx, const DiffusionResult& result, const DiffusionParams& params,
                           const nlohmann::json& graph = nullptr, const nlohmann::json& extra = nullptr,
                           const MetadataTable* metadata = nullptr,
                           const std::vector<std::string>* item_names = nullptr, Timings* steps = nullptr);

/// Writes the embedding files into `dir` (created if missing), all-or-nothing;
/// `steps` gets write_embedding_files's steps, then "commit".
void write_embedding(const std::string& dir, const DiffusionResult& result, const DiffusionParams& params,
                     const nlohmann::json& graph = nullptr, const nlohmann::json& extra = nullptr,
                     const MetadataTable* metadata = nullptr, const std::vector<std::string>* item_names = nullptr,
                     Timings* steps = nullptr);

/// Correlation of each metadata column with psi_1..psi_m of the result (its
/// Markov eigenvectors; the diffusion coordinates when psi is absent).
std::vector<MetadataCorrelation> metadata_correlations(const DiffusionResult& result, const MetadataTable& metadata);

/// VTK XML PolyData of n points with m named coordinates (row-major n x m),
/// an Int64 "index" array, the metadata columns and a String "file" array of
/// the item names (rows index[i]; either may be null). The file appears
/// atomically.
void write_vtp(const std::string& path, int64_t n, int m, const double* coordinates, const int64_t* index,
               const std::vector<std::string>& names, const MetadataTable* metadata = nullptr,
               const std::vector<std::string>* item_names = nullptr);

/// CSV with a header line: index,<names...>,<metadata columns...>[,file]
/// (file: the item names, rows index[i]; with none, no column). The file
/// appears atomically.
void write_csv(const std::string& path, int64_t n, int m, const double* coordinates, const int64_t* index,
               const std::vector<std::string>& names, const MetadataTable* metadata = nullptr,
               const std::vector<std::string>* item_names = nullptr);

struct Embedding {
  int64_t n = 0;                     ///< points embedded
  int m = 0;                         ///< coordinates per point
  std::vector<double> eigenvalues;   ///< m+1
  std::vector<double> coordinates;   ///< n*m row-major
  std::vector<int64_t> point_index;  ///< n
  nlohmann::json metadata;           ///< embedding.json
};

/// Reads eigenvalues.npy, embedding.npy, point_index.npy and embedding.json
/// from `dir` and checks that they agree. Throws Error naming the file.
Embedding read_embedding(const std::string& dir);

/// Names of the diffusion coordinates: dc1..dcM.
std::vector<std::string> coordinate_names(int m);

}  // namespace manifold
