#pragma once
// An image stack as an N x d row-major float32 matrix (each image one row),
// owning its storage or viewing a memory-mapped file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace manifold {

class Dataset {
 public:
  Dataset() = default;
  /// Takes ownership of `values` (size must be rows * cols).
  Dataset(int64_t rows, int64_t cols, std::vector<float> values);
  /// Views `data` kept alive by `owner` (e.g. a memory map).
  Dataset(int64_t rows, int64_t cols, const float* data, std::shared_ptr<const void> owner);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const float* data() const { return data_; }
  const float* row(int64_t i) const { return data_ + i * cols_; }
  bool empty() const { return rows_ == 0; }
  /// True when data() points into a memory-mapped file.
  bool memory_mapped() const { return mapped_; }

  // Metadata, filled by the readers.
  std::string source;               ///< path it was read from
  std::string format;               ///< "npy", "idx", "png", "tiff", "mrc", "hdf5", ...
  std::string source_dtype;         ///< element type on disk: "float32", "uint8", ...
  std::string array;                ///< the array read where the file holds several (an .npz's), else ""
  std::vector<int64_t> item_shape;  ///< shape of one item: {h, w} for images, {d} for vectors
  std::vector<int32_t> labels;      ///< per-row labels when the format has them (else empty)
  /// Per-row names where rows come from files of a folder: "a.png", or
  /// "stack.tif, page 3" for a page of a multi-page TIFF (else empty).
  std::vector<std::string> item_names;

  /// Value range over all elements (computed once, cached).
  std::pair<float, float> value_range() const;
  /// A 64-bit XXH3 hash over shape and values, as hex: identifies the input in graph.json.
  std::string fingerprint() const;

 private:
  int64_t rows_ = 0, cols_ = 0;
  const float* data_ = nullptr;
  std::shared_ptr<const void> owner_;
  bool mapped_ = false;
  mutable bool range_valid_ = false;
  mutable std::pair<float, float> range_{0.f, 0.f};
};

/// Options of the readers.
struct ReadOptions {
  std::string hdf5_dataset;  ///< HDF5/CXI dataset path; empty = /entry_1/data_1/data
  int64_t max_rows = -1;     ///< read only the first rows (-1 = all)
};

/// True where load_dataset would hand `path` to libhdf5: a regular file with
/// an HDF5 name (.h5, .hdf5, .hdf, .cxi, .nxs, .he5) or, with no name it
/// knows, HDF5's signature. False for anything else, and where the file
/// cannot be read.
bool read_by_libhdf5(const std::string& path);

/// The Dataset::item_names load_dataset gives the rows of `path`, found
/// without decoding an image (a folder's listing, its TIFFs' page headers),
/// so a command that needs only the names does not read the images: empty
/// for a path that names no rows (not a folder). Throws Error naming the
/// folder or file where load_dataset would fail to list it or open a TIFF.
std::vector<std::string> item_names_of(const std::string& path);

/// Reads any supported dataset: .npy, MNIST IDX (optionally .gz), a folder of
/// same-sized PNG/TIFF images, a (multi-page) TIFF, MRC/MRCS, HDF5/CXI.
/// Throws manifold::Error with one line naming the file and the problem.
Dataset load_dataset(const std::string& path, const ReadOptions& options = {});

}  // namespace manifold
