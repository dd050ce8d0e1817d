// Detector masks: reading them (.npy, .mrc, CXI), finding them beside the
// data, checking them against the frames and compacting the valid pixels
// into the matrix the k-NN graph is built from. The rules are in mask.h.
#include "manifold/mask.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/parallel.h"
#include "manifold/printable.h"
#include "readers.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

using io::fail;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

/// 3912 -> "3,912".
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// A stack of `layers` masks of `pixels` flags each (one per frame, or one
/// section per MRC page) reduced to one: valid where every layer is valid.
/// `is_valid(i)` answers for flag i of the stack.
template <class IsValid>
std::vector<uint8_t> valid_in_every_layer(int64_t layers, int64_t pixels, IsValid is_valid) {
  std::vector<uint8_t> valid(static_cast<size_t>(pixels), 1);
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t p = 0; p < pixels; ++p)
      if (!is_valid(l * pixels + p)) valid[static_cast<size_t>(p)] = 0;
  return valid;
}

/// .npy: non-zero = valid; 1-D or 2-D is one mask, 3-D a stack (N x h x w)
/// reduced to the pixels valid in every layer.
DetectorMask read_npy_mask(const std::string& path) {
  const npy::Header h = npy::read_header(path);
  io::Sample s{};
  bool swap = false;
  if (!io::npy_sample(h.descr, true, &s, &swap))
    fail(path, "mask of dtype '" + h.descr + "'; expected bool, integers or floats (non-zero = valid)");
  if (h.shape.empty() || h.shape.size() > 3)
    fail(path, "mask of shape " + (h.shape.empty() ? std::string("scalar") : shape_text(h.shape)) +
                   "; expected the frame's shape (h x w, or d), or a stack of them");
  const int64_t count = io::checked_count(path, h.shape, io::sample_size(s));
  // An empty mask would read as no mask at all and be dropped without a word.
  if (count == 0) fail(path, "mask of shape " + shape_text(h.shape) + " holds no pixels");
  std::vector<float> values;
  io::allocate(path, values, static_cast<size_t>(count), "the mask");
  io::npy_values_in_c_order(
      h.shape, h.fortran_order, values.size(), path,
      [&](size_t n, float* out) { io::read_samples(path, h.data_offset, s, swap, n, out); }, values.data());
  DetectorMask m;
  m.source = m.file = path;
  const bool stack = h.shape.size() == 3;
  m.shape.assign(h.shape.begin() + (stack ? 1 : 0), h.shape.end());
  const int64_t layers = stack ? h.shape[0] : 1;
  const int64_t pixels = layers > 0 ? count / layers : 0;
  m.valid = valid_in_every_layer(layers, pixels, [&](int64_t i) { return values[static_cast<size_t>(i)] != 0.0f; });
  return m;
}

/// .mrc: non-zero = valid; several sections are a stack.
DetectorMask read_mrc_mask(const std::string& path) {
  const Dataset sections = io::read_mrc(path, {});
  DetectorMask m;
  m.source = m.file = path;
  m.shape = sections.item_shape;
  m.valid = valid_in_every_layer(sections.rows(), sections.cols(),
                                 [&](int64_t i) { return sections.data()[i] != 0.0f; });
  return m;
}

/// The CXI mask inside an HDF5 file by the CXI rule; empty when it has none.
DetectorMask read_cxi_mask(const std::string& path) {
  io::CxiMask raw;
  DetectorMask m;
  if (!io::read_cxi_mask(path, &raw)) return m;
  m.source = path + ":" + raw.name;
  m.file = path;
  const bool per_frame = raw.dims.size() == 3;
  m.shape.assign(raw.dims.begin() + (per_frame ? 1 : 0), raw.dims.end());
  const int64_t layers = per_frame ? raw.dims[0] : 1;
  const int64_t pixels = layers > 0 ? static_cast<int64_t>(raw.bits.size()) / layers : 0;
  m.valid = valid_in_every_layer(layers, pixels,
                                 [&](int64_t i) { return (raw.bits[static_cast<size_t>(i)] & kCxiBadPixelBits) == 0; });
  return m;
}

bool is_hdf5_name(const std::string& name) {
  for (const char* e : {".cxi", ".h5", ".hdf5", ".hdf", ".nxs"})
    if (ends_with(name, e)) return true;
  return false;
}

/// NAME.mask.npy beside DATA = DIR/NAME.EXT[.gz], or beside the folder DIR/NAME.
std::string mask_beside(const std::string& data_path) {
  fs::path p = fs::path(data_path).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "dir/" names the folder dir
  std::error_code ec;
  std::string stem = p.filename().string();
  if (!fs::is_directory(p, ec)) {
    if (ends_with(lower(stem), ".gz")) stem.resize(stem.size() - 3);
    if (const size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  }
  const fs::path candidate = p.parent_path() / (stem + ".mask.npy");
  return fs::is_regular_file(candidate, ec) && candidate != p ? candidate.string() : std::string();
}

}  // namespace

int64_t DetectorMask::valid_count() const {
  return static_cast<int64_t>(std::count(valid.begin(), valid.end(), uint8_t{1}));
}

DetectorMask read_mask(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path, "no such mask file");
  if (!fs::is_regular_file(path, ec)) fail(path, "a mask must be a file (.npy, .mrc, or a CXI/HDF5 file)");
  const std::string name = lower(fs::path(path).filename().string());
  if (ends_with(name, ".npy")) return read_npy_mask(path);
  for (const char* e : {".mrc", ".mrcs", ".map"})
    if (ends_with(name, e)) return read_mrc_mask(path);
  if (is_hdf5_name(name)) {
    DetectorMask m = read_cxi_mask(path);
    if (m.empty()) fail(path, "holds no CXI mask (/entry_1/data_1/mask or /entry_1/instrument_1/detector_1/mask)");
    return m;
  }
  fail(path, "unknown mask format; expected .npy or .mrc (non-zero = valid), or a CXI/HDF5 file with a CXI mask");
}

DetectorMask find_mask(const std::string& data_path, const std::string& format) {
  if (format == "hdf5")
    if (DetectorMask inside = read_cxi_mask(data_path); !inside.empty()) return inside;
  const std::string beside = mask_beside(data_path);
  return beside.empty() ? DetectorMask{} : read_mask(beside);
}

void check_mask(const DetectorMask& m, const Dataset& frames) {
  if (m.empty()) return;
  const std::string where = printable_path(m.source);
  if (m.shape != frames.item_shape)
    throw Error(where + ": mask of shape " + shape_text(m.shape) + " does not fit the frames of " +
                printable_path(frames.source) + " (" + shape_text(frames.item_shape) + ")");
  if (m.valid_count() == 0) throw Error(where + ": the mask leaves no pixel valid");
}

DetectorMask mask_for(const std::string& data_path, const std::string& option, const Dataset& frames) {
  if (option == "none") return {};
  // A mask that cannot be read or does not fit is a bad argument (exit 2),
  // found beside the data or named: the run must not go on without it.
  try {
    DetectorMask m = option.empty() ? find_mask(data_path, frames.format) : read_mask(option);
    try {
      check_mask(m, frames);
    } catch (const Error& e) {
      if (option.empty()) throw Error(std::string(e.what()) + " (found with the data; --mask none leaves it out)");
      throw;
    }
    return m;
  } catch (const UsageError&) {
    throw;
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

Dataset masked_features(const Dataset& frames, const DetectorMask& m) {
  if (m.empty() || m.valid_count() == m.pixels()) return frames;
  if (m.pixels() != frames.cols())
    throw Error(printable_path(m.source) + ": mask of " + std::to_string(m.pixels()) + " pixels applied to rows of " +
                std::to_string(frames.cols()) + " values");
  std::vector<int64_t> kept;
  kept.reserve(static_cast<size_t>(m.valid_count()));
  for (int64_t j = 0; j < m.pixels(); ++j)
    if (m.valid[static_cast<size_t>(j)]) kept.push_back(j);
  const int64_t n = frames.rows(), d = static_cast<int64_t>(kept.size());
  std::vector<float> v;
  io::allocate(frames.source, v, static_cast<size_t>(n * d), "the masked features");
  // Rows in parallel: a memory-mapped file is read here for the first time.
  parallel_for(0, n, 0, [&](int64_t i) {
    const float* in = frames.row(i);
    float* out = v.data() + i * d;
    for (int64_t j = 0; j < d; ++j) out[j] = in[kept[static_cast<size_t>(j)]];
  });
  Dataset f(n, d, std::move(v));
  f.source = frames.source;
  f.format = frames.format;
  f.source_dtype = frames.source_dtype;
  f.item_shape = {d};
  f.labels = frames.labels;
  f.item_names = frames.item_names;
  return f;
}

std::string mask_summary(const DetectorMask& m) {
  const int64_t valid = m.valid_count(), total = m.pixels();
  char percent[32];
  std::snprintf(percent, sizeof percent, "%.1f%%", total > 0 ? 100.0 * static_cast<double>(valid) / total : 0.0);
  return "mask: " + grouped(valid) + " of " + grouped(total) + " pixels valid (" + percent + ") from " +
         printable_path(m.source);
}

nlohmann::json mask_json(const DetectorMask& m) {
  // "file" absolute, as graph.json's "data": what --mask takes to read it again from anywhere.
  const std::string file = m.file.empty() ? "" : fs::absolute(m.file).lexically_normal().string();
  return {{"source", m.source}, {"file", file}, {"shape", m.shape}, {"pixels", m.pixels()}, {"valid", m.valid_count()}};
}

}  // namespace manifold
