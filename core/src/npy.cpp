#include "manifold/npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "manifold/error.h"
#include "manifold/output.h"

namespace manifold::npy {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

size_t descr_size(const std::string& d) {
  if (d.size() < 3) return 0;
  return static_cast<size_t>(std::atoi(d.c_str() + 2));
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
template <> std::string descr_of<float>() { return "<f4"; }
template <> std::string descr_of<double>() { return "<f8"; }
template <> std::string descr_of<int64_t>() { return "<i8"; }
template <> std::string descr_of<int32_t>() { return "<i4"; }
template <> std::string descr_of<int16_t>() { return "<i2"; }
template <> std::string descr_of<uint16_t>() { return "<u2"; }
template <> std::string descr_of<uint8_t>() { return "|u1"; }

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
  std::string dict = "{'descr': '" + descr_of<T>() + "', 'fortran_order': False, 'shape': " +
                     shape_str + ", }";
  // Version 1.0: magic(6) + version(2) + len(2) + header, total padded to 64 bytes.
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict.push_back('\n');
  if (dict.size() > 65535) throw Error(path + ": array shape too long for the .npy header");
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot open for writing");
    out.write("\x93NUMPY\x01\x00", 8);
    uint16_t len = static_cast<uint16_t>(dict.size());
    char lenb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
    out.write(lenb, 2);
    out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw Error(path + ": write failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename temporary file into place");
  }
}

}  // namespace

size_t Header::item_size() const { return descr_size(descr); }

int64_t Header::count() const {
  int64_t c = 1;
  for (auto s : shape) c *= s;
  return c;
}

Header read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(magic[6]);
  size_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<size_t>(b[3]) << 24);
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major));
  }
  std::string dict(hlen, '\0');
  in.read(dict.data(), static_cast<std::streamsize>(hlen));
  if (!in) fail(path, "truncated .npy header");
  Header h;
  h.data_offset = (major == 1 ? 10 : 12) + hlen;
  std::smatch m;
  if (!std::regex_search(dict, m, std::regex(R"('descr'\s*:\s*'([^']+)')")))
    fail(path, "malformed .npy header (no descr)");
  h.descr = m[1];
  if (std::regex_search(dict, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")))
    h.fortran_order = m[1] == "True";
  if (!std::regex_search(dict, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    fail(path, "malformed .npy header (no shape)");
  std::string s = m[1];
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    auto b = tok.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    try {
      h.shape.push_back(std::stoll(tok.substr(b)));
    } catch (...) {
      fail(path, "malformed .npy shape '" + s + "'");
    }
  }
  if (h.descr.size() < 3) fail(path, "unsupported dtype '" + h.descr + "'");
  if (h.descr[0] == '>' && h.item_size() > 1) fail(path, "big-endian .npy arrays are not supported");
  // Check the file holds all the data it claims.
  in.seekg(0, std::ios::end);
  auto size = static_cast<uint64_t>(in.tellg());
  if (size < h.data_offset + static_cast<uint64_t>(h.count()) * h.item_size())
    fail(path, "truncated: header says " + std::to_string(h.count()) + " elements of " +
                   std::to_string(h.item_size()) + " bytes");
  return h;
}

template <class T>
std::vector<T> read(const std::string& path, std::vector<int64_t>* shape) {
  Header h = read_header(path);
  if (h.fortran_order && h.shape.size() > 1) fail(path, "Fortran-order arrays are not supported");
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  int64_t n = h.count();
  std::vector<char> raw(static_cast<size_t>(n) * h.item_size());
  in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
  if (!in) fail(path, "read failed");
  std::vector<T> out(static_cast<size_t>(n));
  char kind = h.descr[1];
  size_t sz = h.item_size();
  const char* p = raw.data();
  if (kind == 'f' && sz == 4) convert<float>(p, n, out.data());
  else if (kind == 'f' && sz == 8) convert<double>(p, n, out.data());
  else if (kind == 'i' && sz == 8) convert<int64_t>(p, n, out.data());
  else if (kind == 'i' && sz == 4) convert<int32_t>(p, n, out.data());
  else if (kind == 'i' && sz == 2) convert<int16_t>(p, n, out.data());
  else if (kind == 'i' && sz == 1) convert<int8_t>(p, n, out.data());
  else if (kind == 'u' && sz == 8) convert<uint64_t>(p, n, out.data());
  else if (kind == 'u' && sz == 4) convert<uint32_t>(p, n, out.data());
  else if (kind == 'u' && sz == 2) convert<uint16_t>(p, n, out.data());
  else if (kind == 'u' && sz == 1) convert<uint8_t>(p, n, out.data());
  else if (kind == 'b' && sz == 1) convert<uint8_t>(p, n, out.data());
  else fail(path, "unsupported dtype '" + h.descr + "'");
  if (shape) *shape = h.shape;
  return out;
}

template std::vector<float> read<float>(const std::string&, std::vector<int64_t>*);
template std::vector<double> read<double>(const std::string&, std::vector<int64_t>*);
template std::vector<int64_t> read<int64_t>(const std::string&, std::vector<int64_t>*);
template std::vector<int32_t> read<int32_t>(const std::string&, std::vector<int64_t>*);

void write(const std::string& p, const float* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const double* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const int64_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const int32_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const uint8_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const uint16_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }
void write(const std::string& p, const int16_t* d, const std::vector<int64_t>& s) { write_impl(p, d, s); }

}  // namespace manifold::npy
