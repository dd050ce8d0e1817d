#pragma once
// A session file: every parameter of a run and the data it ran on, so a run
// made in the GUI can be reproduced with `manifold run --session FILE`.
//
// Format (JSON, UTF-8):
//   {
//     "format": "manifold-session",           required
//     "version": 1,                           required
//     "data": "patterns.npy",                 required; relative paths are relative to the session file's folder
//     "dataset": "/entry_1/data_1/data",      optional HDF5/CXI dataset path ("" = the reader's default)
//     "transform": "none",                    optional: as run --transform (none, anscombe, binB, steps joined by +)
//     "mask": "det.mask.npy",                 optional: as run --mask (a file, relative like "data"; "none";
//                                             absent = the mask found with the data, see mask.h)
//     "metadata": ["labels.npy:class"],       optional: as run --metadata, FILE or FILE:COLUMN each (files
//                                             relative like "data"); run --session adds its --metadata
//     "knn": {                                optional object, every key optional (defaults of KnnParams):
//       "k": 10, "metric": "euclidean", "backend": "auto", "select": "auto",
//       "keep_self": false, "devices": [], "gpu_memory": 0, "threads": 0, "precision": "exact" },
//     "diffusion": {                          optional object, every key optional (defaults of DiffusionParams):
//       "k": 0, "epsilon": "median", "alpha": 1.0, "components": 10, "t": 1.0,
//       "symmetrize": "or", "local_scaling": 0, "tolerance": 1e-10, "ncv": 0, "lock_check": true,
//       "threads": 0 },
//     "output": "run1",                       optional output folder, below the session's own folder; -o overrides
//     "view": { ... }                         optional GUI state (axes, colouring, selection); the CLI ignores it
//   }
// "epsilon" may also be written as a number. Unknown keys inside "knn" and
// "diffusion" are errors (a typo must not silently change a run).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/diffusion_map.h"
#include "manifold/knn.h"

namespace manifold {

struct Session {
  std::string data;                   ///< dataset path (absolute after read_session resolves it)
  std::string dataset;                ///< HDF5 dataset path, "" = default
  std::string transform = "none";     ///< as run --transform: none, anscombe, binB, steps joined by +
  std::string mask;                   ///< as run --mask: a file, "none", or "" = the mask found with the data
  std::vector<std::string> metadata;  ///< as run --metadata: FILE or FILE:COLUMN (absolute after read_session)
  std::string backend = "auto";       ///< k-NN backend name
  KnnParams knn;
  DiffusionParams diffusion;
  std::string output;   ///< "" = not given
  nlohmann::json view;  ///< GUI state, passed through
};

nlohmann::json session_to_json(const Session& session);
/// Parses a session; relative paths are resolved against `base_dir` ("" = as given).
/// Throws Error starting with `source` for a malformed session.
Session session_from_json(const nlohmann::json& j, const std::string& base_dir, const std::string& source);

Session read_session(const std::string& path);
/// Writes atomically. Paths are written as stored in `session`.
void write_session(const std::string& path, const Session& session);

}  // namespace manifold
