// NumPy .npy: N x d, or N x h x w taken as N x (h*w). float32 is memory-mapped
// (no copy, pages loaded on demand); other types are converted to float32.
#include <algorithm>

#include "manifold/npy.h"
#include "readers.h"

namespace manifold::io {

namespace {

// Maps a little-endian (or byte-sized) descr to a sample type; false when the
// type is not an image sample type.
bool sample_of(const std::string& descr, Sample* s) {
  static const struct {
    const char* descr;
    Sample sample;
  } table[] = {{"f2", Sample::f16}, {"f4", Sample::f32}, {"f8", Sample::f64}, {"u1", Sample::u8},  {"u2", Sample::u16},
               {"u4", Sample::u32}, {"i1", Sample::i8},  {"i2", Sample::i16}, {"i4", Sample::i32}, {"i8", Sample::i64}};
  if (descr.size() != 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=')) return false;
  for (auto& t : table)
    if (descr.compare(1, 2, t.descr) == 0) {
      *s = t.sample;
      return true;
    }
  return false;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

Dataset read_npy(const std::string& path, const ReadOptions& opt) {
  npy::Header h = npy::read_header(path);
  Sample s{};
  if (!sample_of(h.descr, &s)) {
    const char kind = h.descr.size() > 1 ? h.descr[1] : '?';
    const std::string what = kind == 'b'                  ? " (bool)"
                             : kind == 'c'                ? " (complex)"
                             : kind == 'U' || kind == 'S' ? " (text)"
                                                          : "";
    fail(path, "unsupported dtype '" + h.descr + "'" + what + "; expected float16/32/64, uint8/16/32 or int8/16/32/64");
  }
  if (h.shape.size() != 2 && h.shape.size() != 3)
    fail(path, "array of shape " + shape_text(h.shape) + " is " + std::to_string(h.shape.size()) +
                   "-D; expected N x d or N x h x w");
  if (h.fortran_order) fail(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  checked_count(path, h.shape, sample_size(s));
  const std::vector<int64_t> item(h.shape.begin() + 1, h.shape.end());
  int64_t d = 1;
  for (int64_t x : item) d *= x;
  if (d == 0) fail(path, "items of shape " + shape_text(h.shape) + " hold no values");
  int64_t n = h.shape[0];
  if (opt.max_rows >= 0) n = std::min(n, opt.max_rows);

  Dataset ds;
  if (s == Sample::f32 && h.data_offset % alignof(float) == 0 && n > 0) {
    size_t size = 0;
    auto map = map_file(path, &size);
    // read_header checked the size, but the file may have shrunk since.
    if (size < h.data_offset + static_cast<size_t>(n * d) * sizeof(float)) fail(path, "truncated while reading");
    const float* base = reinterpret_cast<const float*>(static_cast<const char*>(map.get()) + h.data_offset);
    ds = Dataset(n, d, base, std::move(map));
  } else {
    std::vector<float> v;
    allocate(path, v, static_cast<size_t>(n * d), std::to_string(n) + " x " + std::to_string(d) + " float32 values");
    read_samples(path, h.data_offset, s, false, v.size(), v.data());
    ds = Dataset(n, d, std::move(v));
  }
  ds.item_shape = item;
  ds.source_dtype = sample_name(s);
  ds.format = "npy";
  return ds;
}

}  // namespace manifold::io
