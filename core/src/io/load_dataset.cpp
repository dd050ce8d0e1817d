// load_dataset: picks the reader from the file name, or from the first bytes
// when the name says nothing, and applies the checks every format shares.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "manifold/dataset.h"
#include "manifold/error.h"
#include "readers.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

using io::fail;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

enum class Format { npy, npz, idx, png, tiff, mrc, hdf5, unknown };

Format from_name(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ends_with(name, ".npy")) return Format::npy;
  if (ends_with(name, ".npz")) return Format::npz;
  if (name.find("idx1-ubyte") != std::string::npos || name.find("idx2-ubyte") != std::string::npos ||
      name.find("idx3-ubyte") != std::string::npos || ends_with(name, ".idx") || ends_with(name, ".idx.gz"))
    return Format::idx;
  if (ends_with(name, ".png")) return Format::png;
  if (ends_with(name, ".tif") || ends_with(name, ".tiff")) return Format::tiff;
  for (const char* e : {".mrc", ".mrcs", ".st", ".ali", ".map"})
    if (ends_with(name, e)) return Format::mrc;
  for (const char* e : {".h5", ".hdf5", ".hdf", ".cxi", ".nxs", ".he5"})
    if (ends_with(name, e)) return Format::hdf5;
  return Format::unknown;
}

Format from_contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  unsigned char h[1024] = {0};
  in.read(reinterpret_cast<char*>(h), sizeof h);
  const auto got = static_cast<size_t>(in.gcount());
  if (got == 0) fail(path, "empty file");
  if (got >= 6 && std::memcmp(h, "\x93NUMPY", 6) == 0) return Format::npy;
  if (got >= 8 && std::memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0) return Format::png;
  if (got >= 4 && std::memcmp(h, "PK\x03\x04", 4) == 0) return Format::npz;  // a zip archive
  if (got >= 4 && (std::memcmp(h, "II*\0", 4) == 0 || std::memcmp(h, "MM\0*", 4) == 0 ||
                   std::memcmp(h, "II+\0", 4) == 0 || std::memcmp(h, "MM\0+", 4) == 0))
    return Format::tiff;
  if (got >= 8 && std::memcmp(h, "\x89HDF\r\n\x1a\n", 8) == 0) return Format::hdf5;
  if (got >= 212 && std::memcmp(h + 208, "MAP ", 4) == 0) return Format::mrc;
  // gzip (a compressed IDX file) or an IDX magic: 0, 0, type, dimensions.
  if (got >= 2 && h[0] == 0x1f && h[1] == 0x8b) return Format::idx;
  if (got >= 4 && h[0] == 0 && h[1] == 0 && h[2] >= 0x08 && h[2] <= 0x0E && h[3] >= 1 && h[3] <= 3) return Format::idx;
  return Format::unknown;
}

// Non-finite values would poison every distance; say where the first one is.
void check_finite(const Dataset& ds) {
  const int64_t d = ds.cols();
  for (int64_t i = 0; i < ds.rows(); ++i) {
    const float* r = ds.row(i);
    bool bad = false;
    for (int64_t j = 0; j < d; ++j) bad |= !(std::fabs(r[j]) <= 3.4028235e38f);
    if (bad) {
      int64_t j = 0;
      while (std::isfinite(r[j])) ++j;
      const char* what = std::isnan(r[j]) ? "NaN" : r[j] > 0 ? "+inf" : "-inf";
      fail(ds.source, "row " + std::to_string(i) + " holds a non-finite value (" + what + " at column " +
                          std::to_string(j) + "); clean the data first");
    }
  }
}

}  // namespace

namespace {

Dataset read_any(const std::string& path, const ReadOptions& opt) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) fail(path, "no such file or directory");
  if (fs::is_directory(status)) return io::read_image_folder(path, opt);
  if (!fs::is_regular_file(status)) fail(path, "not a regular file or folder");
  Format f = from_name(path);
  if (f == Format::unknown) f = from_contents(path);
  switch (f) {
    case Format::npy: return io::read_npy(path, opt);
    case Format::npz: return io::read_npz(path, opt);
    case Format::idx: return io::read_idx(path, opt);
    case Format::png: return io::read_png(path, opt);
    case Format::tiff: return io::read_tiff(path, opt);
    case Format::mrc: return io::read_mrc(path, opt);
    case Format::hdf5: return io::read_hdf5(path, opt);
    case Format::unknown: break;
  }
  fail(path,
       "unrecognised dataset format (expected .npy, .npz, *-idx3-ubyte[.gz], a PNG/TIFF folder, .tif, .mrc/.mrcs, "
       ".h5/.cxi)");
}

}  // namespace

bool read_by_libhdf5(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const Format f = from_name(path);
  if (f != Format::unknown) return f == Format::hdf5;
  try {
    return from_contents(path) == Format::hdf5;
  } catch (const Error&) {
    return false;  // unreadable or empty: load_dataset refuses it before any library
  }
}

std::vector<std::string> item_names_of(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {};
  return io::image_folder_item_names(path);
}

Dataset load_dataset(const std::string& path, const ReadOptions& opt) {
  if (path.empty()) throw Error("no dataset path given");
  Dataset ds;
  // Readers allocate through io::allocate, which names the size; an
  // allocation inside a library still names the file.
  try {
    ds = read_any(path, opt);
  } catch (const std::bad_alloc&) {
    fail(path, "out of memory while reading");
  }
  if (ds.rows() == 0) fail(path, "contains no images");
  if (ds.cols() == 0) fail(path, "images hold no values (d = 0)");
  ds.source = path;
  const std::string& t = ds.source_dtype;
  if (t.rfind("float", 0) == 0) check_finite(ds);
  return ds;
}

}  // namespace manifold
