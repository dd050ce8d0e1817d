// NumPy .npy: N x d, or N x h x w taken as N x (h*w). Little-endian float32
// in C order is memory-mapped (no copy, pages loaded on demand); other types,
// big-endian and Fortran-order arrays are converted to float32 in C order.
#include <algorithm>

#include "manifold/npy.h"
#include "readers.h"

namespace manifold::io {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// out = in with its axes reversed, for the first `rows` indices of out's
/// first axis: in is C-order (c, b, a), out C-order (a, b, c) -- a Fortran-
/// order array of shape (a, b, c) read as stored. In 32 x 32 blocks of (i0,
/// i2), so that neither side is read or written one cache line per value.
void reverse_axes(const float* in, int64_t a, int64_t b, int64_t c, int64_t rows, float* out) {
  constexpr int64_t kBlock = 32;
  for (int64_t i1 = 0; i1 < b; ++i1)
    for (int64_t i0b = 0; i0b < rows; i0b += kBlock)
      for (int64_t i2b = 0; i2b < c; i2b += kBlock)
        for (int64_t i0 = i0b; i0 < std::min(rows, i0b + kBlock); ++i0)
          for (int64_t i2 = i2b; i2 < std::min(c, i2b + kBlock); ++i2)
            out[(i0 * b + i1) * c + i2] = in[(i2 * b + i1) * a + i0];
}

}  // namespace

std::string unsupported_npy_dtype(const std::string& descr) {
  const char kind = descr.size() > 1 ? descr[1] : '?';
  const std::string what = kind == 'b'                  ? " (bool)"
                           : kind == 'c'                ? " (complex)"
                           : kind == 'U' || kind == 'S' ? " (text)"
                                                        : "";
  return "unsupported dtype '" + descr + "'" + what + "; expected float16/32/64, uint8/16/32 or int8/16/32/64";
}

std::string npy_type_text(Sample s, bool swap, bool fortran_order) {
  std::string t = sample_name(s);
  if (swap || fortran_order)
    t += std::string(" (") + (swap ? "big-endian" : "") + (swap && fortran_order ? ", " : "") +
         (fortran_order ? "Fortran order" : "") + ")";
  return t;
}

bool npy_sample(const std::string& descr, bool allow_bool, Sample* s, bool* swap) {
  static const struct {
    const char* descr;
    Sample sample;
  } table[] = {{"f2", Sample::f16}, {"f4", Sample::f32}, {"f8", Sample::f64}, {"u1", Sample::u8},  {"u2", Sample::u16},
               {"u4", Sample::u32}, {"i1", Sample::i8},  {"i2", Sample::i16}, {"i4", Sample::i32}, {"i8", Sample::i64}};
  if (descr.size() != 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=' && descr[0] != '>')) return false;
  *swap = false;
  if (allow_bool && descr.compare(1, 2, "b1") == 0) {
    *s = Sample::u8;
    return true;
  }
  for (auto& t : table)
    if (descr.compare(1, 2, t.descr) == 0) {
      *s = t.sample;
      *swap = descr[0] == '>' && sample_size(t.sample) > 1;
      return true;
    }
  return false;
}

void npy_values_in_c_order(const std::vector<int64_t>& shape, bool fortran_order, size_t count,
                           const std::string& where, const ReadStored& read, float* dst) {
  if (!fortran_order || shape.size() < 2) {
    read(count, dst);
    return;
  }
  if (shape.size() > 3) fail(where, "internal: a Fortran-order array of more than three axes");
  // (N, d) as (N, 1, d): the same offsets either way.
  const int64_t a = shape[0], b = shape.size() == 3 ? shape[1] : 1, c = shape.back();
  if (b * c == 0) return;  // no values (the callers refuse such items)
  std::vector<float> stored;
  allocate(where, stored, static_cast<size_t>(a * b * c), "the Fortran-order array before its transposition");
  read(stored.size(), stored.data());
  reverse_axes(stored.data(), a, b, c, static_cast<int64_t>(count) / (b * c), dst);
}

Dataset read_npy(const std::string& path, const ReadOptions& opt) {
  npy::Header h = npy::read_header(path);
  Sample s{};
  bool swap = false;
  if (!npy_sample(h.descr, false, &s, &swap)) fail(path, unsupported_npy_dtype(h.descr));
  if (h.shape.size() != 2 && h.shape.size() != 3)
    fail(path, "array of shape " + shape_text(h.shape) + " is " + std::to_string(h.shape.size()) +
                   "-D; expected N x d or N x h x w");
  checked_count(path, h.shape, sample_size(s));
  const std::vector<int64_t> item(h.shape.begin() + 1, h.shape.end());
  int64_t d = 1;
  for (int64_t x : item) d *= x;
  if (d == 0) fail(path, "items of shape " + shape_text(h.shape) + " hold no values");
  int64_t n = h.shape[0];
  if (opt.max_rows >= 0) n = std::min(n, opt.max_rows);

  Dataset ds;
  if (s == Sample::f32 && !swap && !h.fortran_order && h.data_offset % alignof(float) == 0 && n > 0) {
    ds = mapped_float32(path, h.data_offset, n, d, path);
  } else {
    std::vector<float> v;
    allocate(path, v, static_cast<size_t>(n * d), std::to_string(n) + " x " + std::to_string(d) + " float32 values");
    npy_values_in_c_order(
        h.shape, h.fortran_order, v.size(), path,
        [&](size_t n, float* out) { read_samples(path, h.data_offset, s, swap, n, out); }, v.data());
    ds = Dataset(n, d, std::move(v));
  }
  ds.item_shape = item;
  ds.source_dtype = npy_type_text(s, swap, h.fortran_order);
  ds.format = "npy";
  return ds;
}

}  // namespace manifold::io
