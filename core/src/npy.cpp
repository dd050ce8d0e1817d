#include "manifold/npy.h"

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <limits>
#include <fstream>

#include "manifold/error.h"
#include "manifold/printable.h"
#include "manifold/result_vector.h"
#include "manifold/output.h"

namespace manifold::npy {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(printable_path(path) + ": " + what);
}

/// The item size of a simple dtype string (byte order, kind, decimal size:
/// "<f4", "|u1"); 0 for anything else (structured, trailing characters).
size_t descr_size(const std::string& d) {
  if (d.size() < 3 || d.size() > 4 || std::string("<>|=").find(d[0]) == std::string::npos) return 0;
  size_t v = 0;
  for (size_t i = 2; i < d.size(); ++i) {
    if (d[i] < '0' || d[i] > '9') return 0;
    v = v * 10 + static_cast<size_t>(d[i] - '0');
  }
  return v;
}

template <class In, class Out>
void convert(const char* src, int64_t n, Out* dst) {
  for (int64_t i = 0; i < n; ++i) {
    In v;
    std::memcpy(&v, src + i * sizeof(In), sizeof(In));
    dst[i] = static_cast<Out>(v);
  }
}

template <class T>
std::string descr_of();
template <>
std::string descr_of<float>() {
  return "<f4";
}
template <>
std::string descr_of<double>() {
  return "<f8";
}
template <>
std::string descr_of<int64_t>() {
  return "<i8";
}
template <>
std::string descr_of<int32_t>() {
  return "<i4";
}
template <>
std::string descr_of<int16_t>() {
  return "<i2";
}
template <>
std::string descr_of<uint16_t>() {
  return "<u2";
}
template <>
std::string descr_of<uint8_t>() {
  return "|u1";
}

template <class T>
void write_impl(const std::string& path, const T* data, const std::vector<int64_t>& shape) {
  std::string shape_str = "(";
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw Error(path + ": negative dimension in array shape");
    shape_str += std::to_string(shape[i]);
    shape_str += (shape.size() == 1 || i + 1 < shape.size()) ? "," : "";
    if (i + 1 < shape.size()) shape_str += " ";
    count *= shape[i];
  }
  shape_str += ")";
  std::string dict = "{'descr': '" + descr_of<T>() + "', 'fortran_order': False, 'shape': " + shape_str + ", }";
  // Version 1.0: magic(6) + version(2) + len(2) + header, total padded to 64 bytes.
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict.push_back('\n');
  if (dict.size() > 65535) throw Error(path + ": array shape too long for the .npy header");
  const uint16_t len = static_cast<uint16_t>(dict.size());
  const char prefix[10] = {
      '\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  write_file_atomically(path, {{prefix, sizeof prefix},
                               {dict.data(), dict.size()},
                               {data, static_cast<size_t>(count) * sizeof(T)}});
}

/// Headers longer than this are refused before they are read: NumPy writes
/// ~120 bytes for the dtypes read here, and the length field alone must not
/// decide an allocation (a 770-byte file announcing 2 GiB).
constexpr size_t kMaxHeaderBytes = size_t{1} << 20;

/// The header dictionary as NumPy writes it -- a Python literal such as
/// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } -- parsed by
/// hand in one pass: no regex (libstdc++'s recurses per character and
/// overflowed the stack on a 30 KB field), no eval. Strings, True/False and
/// tuples of non-negative integers; a repeated key keeps its last value, as
/// Python's dict does.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : t_(text), path_(path) {}

  void parse(Header& h) {
    bool have_descr = false, have_shape = false;
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') ++i_;
      else if (peek() != '}')
        bad("expected ',' or '}'");
    }
    if (!have_descr) fail(path_, "malformed .npy header (no descr)");
    if (!have_shape) fail(path_, "malformed .npy header (no shape)");
  }

 private:
  char peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  void skip_space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  [[noreturn]] void bad(const std::string& what) const {
    fail(path_, "malformed .npy header (" + what + " at byte " + std::to_string(i_) + ")");
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad("expected a string");
    const size_t end = t_.find(quote, ++i_);
    if (end == std::string::npos) bad("unterminated string");
    std::string v = t_.substr(i_, end - i_);
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    for (const char* word : {"True", "False"})
      if (t_.compare(i_, std::strlen(word), word) == 0) {
        i_ += std::strlen(word);
        return word[0] == 'T';
      }
    bad("expected True or False");
  }
  std::vector<int64_t> tuple() {
    if (peek() != '(') bad("expected a tuple for shape");
    ++i_;
    std::vector<int64_t> dims;
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      dims.push_back(dimension());
      skip_space();
      if (peek() == ',') ++i_;
      else if (peek() != ')')
        bad("expected ',' or ')' in shape");
    }
    ++i_;
    return dims;
  }
  /// A decimal dimension, at most 2^62 (so products can be checked).
  int64_t dimension() {
    if (!(peek() >= '0' && peek() <= '9')) bad("a dimension must be a non-negative integer");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      // Checked before the multiplication: v * 10 past 2^63 is undefined.
      const int digit = peek() - '0';
      if (v > ((int64_t{1} << 62) - digit) / 10) bad("dimension too large");
      v = v * 10 + digit;
      ++i_;
    }
    if (peek() == 'L') ++i_;  // Python 2's long suffix, written by old NumPy
    return v;
  }

  const std::string& t_;
  const std::string& path_;
  size_t i_ = 0;
};

}  // namespace

size_t Header::item_size() const { return descr_size(descr); }

int64_t Header::count() const {
  // Saturates instead of overflowing; read_header refuses any count the file cannot hold.
  int64_t c = 1;
  for (auto s : shape) {
    if (s != 0 && c > std::numeric_limits<int64_t>::max() / s) return std::numeric_limits<int64_t>::max();
    c *= s;
  }
  return c;
}

Header parse_header(const ReadBytes& read, uint64_t size, const std::string& path) {
  char magic[8];
  if (!read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(magic[6]);
  size_t hlen = 0;
  unsigned char b[4] = {0, 0, 0, 0};
  if (major == 1) {
    if (!read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated .npy header");
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    if (!read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated .npy header");
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<size_t>(b[3]) << 24);
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major));
  }
  const size_t prefix = major == 1 ? 10 : 12;
  if (hlen > kMaxHeaderBytes)
    fail(path, "the .npy header announces " + std::to_string(hlen) + " bytes; more than " +
                   std::to_string(kMaxHeaderBytes) + " is not a header of an array this program reads");
  if (prefix + hlen > size) fail(path, "truncated .npy header");
  std::string dict(hlen, '\0');
  if (!read(dict.data(), hlen)) fail(path, "truncated .npy header");
  Header h;
  h.data_offset = prefix + hlen;
  HeaderParser(dict, path).parse(h);
  if (h.descr.size() < 3 || h.item_size() == 0) fail(path, "unsupported dtype '" + h.descr + "'");
  // Check the file holds all the data it claims (count() saturates, so a
  // shape whose product overflows is refused here too).
  const uint64_t count = static_cast<uint64_t>(h.count());
  if (count > (size - h.data_offset) / h.item_size())
    fail(path, "truncated: header says " + std::to_string(h.count()) + " elements of " + std::to_string(h.item_size()) +
                   " bytes");
  return h;
}

Header read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  return parse_header([&](char* dst,
                          size_t n) { return static_cast<bool>(in.read(dst, static_cast<std::streamsize>(n))); },
                      size, path);
}

namespace {

/// Converts `n` values of the file's type (kind, size) at `src` to T; false
/// for a type this reader does not convert.
template <class T>
bool convert_from(char kind, size_t size, const char* src, int64_t n, T* dst) {
  if (kind == 'f' && size == 4) convert<float>(src, n, dst);
  else if (kind == 'f' && size == 8)
    convert<double>(src, n, dst);
  else if (kind == 'i' && size == 8)
    convert<int64_t>(src, n, dst);
  else if (kind == 'i' && size == 4)
    convert<int32_t>(src, n, dst);
  else if (kind == 'i' && size == 2)
    convert<int16_t>(src, n, dst);
  else if (kind == 'i' && size == 1)
    convert<int8_t>(src, n, dst);
  else if (kind == 'u' && size == 8)
    convert<uint64_t>(src, n, dst);
  else if (kind == 'u' && size == 4)
    convert<uint32_t>(src, n, dst);
  else if (kind == 'u' && size == 2)
    convert<uint16_t>(src, n, dst);
  else if ((kind == 'u' || kind == 'b') && size == 1)
    convert<uint8_t>(src, n, dst);
  else
    return false;
  return true;
}

/// Reverses the byte order of each of `n` items of `size` bytes at `p`.
void swap_items(char* p, int64_t n, size_t size) {
  for (int64_t i = 0; i < n; ++i)
    std::reverse(p + static_cast<size_t>(i) * size, p + static_cast<size_t>(i + 1) * size);
}

/// A Fortran-order array (axis 0 fastest) of `shape` rewritten in place in C
/// order (the last axis fastest): an odometer over the C-order indices with
/// the Fortran offset kept alongside.
template <class T, class Alloc>
void to_c_order(std::vector<T, Alloc>& v, const std::vector<int64_t>& shape) {
  const size_t rank = shape.size();
  std::vector<int64_t> f_stride(rank, 1), index(rank, 0);
  for (size_t a = 1; a < rank; ++a) f_stride[a] = f_stride[a - 1] * shape[a - 1];
  const std::vector<T, Alloc> stored = v;
  int64_t f = 0;
  for (size_t c = 0; c < v.size(); ++c) {
    v[c] = stored[static_cast<size_t>(f)];
    for (size_t a = rank; a-- > 0;) {  // the next C-order index
      f += f_stride[a];
      if (++index[a] < shape[a]) break;
      f -= f_stride[a] * shape[a];
      index[a] = 0;
    }
  }
}

}  // namespace

template <class T, class Alloc>
std::vector<T, Alloc> read(const std::string& path, std::vector<int64_t>* shape) {
  // Fortran order (np.save of a transposed array, as metadata columns
  // stacked with np.array([...]).T are) and big-endian arrays are read as
  // the C-order, native values they stand for.
  Header h = read_header(path);
  const bool swap = h.descr[0] == '>' && h.item_size() > 1;
  const char kind = h.descr[1];
  const size_t size = h.item_size();
  if (!convert_from<T>(kind, size, nullptr, 0, nullptr)) fail(path, "unsupported dtype '" + h.descr + "'");
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  const int64_t n = h.count();
  std::vector<T, Alloc> out(static_cast<size_t>(n));
  if (h.descr.compare(1, std::string::npos, descr_of<T>(), 1) == 0) {
    // The file's type is T: one read straight into the result.
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(T)));
    if (!in) fail(path, "read failed");
    if (swap) swap_items(reinterpret_cast<char*>(out.data()), n, sizeof(T));
  } else {
    // Converted a few megabytes at a time: no copy of the whole file.
    constexpr int64_t kChunk = int64_t{1} << 20;
    std::vector<char> raw(static_cast<size_t>(std::min(n, kChunk)) * size);
    for (int64_t first = 0; first < n; first += kChunk) {
      const int64_t count = std::min(kChunk, n - first);
      in.read(raw.data(), static_cast<std::streamsize>(static_cast<size_t>(count) * size));
      if (!in) fail(path, "read failed");
      if (swap) swap_items(raw.data(), count, size);
      convert_from(kind, size, raw.data(), count, out.data() + first);
    }
  }
  if (h.fortran_order && h.shape.size() > 1) to_c_order(out, h.shape);
  if (shape) *shape = h.shape;
  return out;
}

template std::vector<float> read<float>(const std::string&, std::vector<int64_t>*);
template std::vector<double> read<double>(const std::string&, std::vector<int64_t>*);
template std::vector<int64_t> read<int64_t>(const std::string&, std::vector<int64_t>*);
template std::vector<int32_t> read<int32_t>(const std::string&, std::vector<int64_t>*);
template ResultVector<float> read<float, DefaultInitAllocator<float>>(const std::string&, std::vector<int64_t>*);
template ResultVector<int64_t> read<int64_t, DefaultInitAllocator<int64_t>>(const std::string&, std::vector<int64_t>*);

void write(const std::string& p, const float* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const double* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const int64_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const int32_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const uint8_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const uint16_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const int16_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }

}  // namespace manifold::npy
