// MNIST-style IDX files (big-endian header and samples), plain or gzip: zlib's
// gzread reads both, so one path serves. Labels come from the sibling
// X-labels-idx1-ubyte[.gz] file when it is there.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "manifold/error.h"
#include "readers.h"

namespace fs = std::filesystem;

namespace manifold::io {

namespace {

class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    f_ = gzopen(path.c_str(), "rb");
    if (!f_) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  }
  ~GzReader() { gzclose(f_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  /// Reads up to n bytes; returns how many (fewer only at the end of the data).
  size_t read(unsigned char* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      const unsigned want = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      const int got = gzread(f_, dst + done, want);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(f_, &code);
        fail(path_, std::string("corrupt or truncated gzip data (") + (msg ? msg : "zlib error") + ")");
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

 private:
  std::string path_;
  gzFile f_ = nullptr;
};

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// gzip's magic: such a file is decompressed, any other is read as it is.
bool is_gzip(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char m[2] = {0, 0};
  const bool gz = std::fread(m, 1, 2, f) == 2 && m[0] == 0x1f && m[1] == 0x8b;
  std::fclose(f);
  return gz;
}

bool idx_sample(int code, Sample* s) {
  switch (code) {
    case 0x08: *s = Sample::u8; return true;
    case 0x09: *s = Sample::i8; return true;
    case 0x0B: *s = Sample::i16; return true;
    case 0x0C: *s = Sample::i32; return true;
    case 0x0D: *s = Sample::f32; return true;
    case 0x0E: *s = Sample::f64; return true;
    default: return false;
  }
}

// Labels are optional: a missing, foreign or short label file leaves the
// dataset unlabelled rather than refusing images that are fine.
std::vector<int32_t> read_labels(const std::string& path, int64_t n) {
  std::vector<int32_t> labels;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return labels;
  try {
    GzReader in(path);
    unsigned char head[8];
    if (in.read(head, 8) != 8 || be32(head) != 0x00000801u || be32(head + 4) < static_cast<uint64_t>(n)) return labels;
    std::error_code ec;
    const uint64_t file_size = fs::file_size(path, ec);
    if (ec || static_cast<uint64_t>(n) > (file_size + 1) * kDeflateMaxRatio) return labels;
    std::vector<unsigned char> raw(static_cast<size_t>(n));
    if (in.read(raw.data(), raw.size()) != raw.size()) return labels;
    labels.assign(raw.begin(), raw.end());
  } catch (const Error&) {
    labels.clear();
  }
  return labels;
}

}  // namespace

Dataset read_idx(const std::string& path, const ReadOptions& opt) {
  GzReader in(path);
  unsigned char magic[4];
  if (in.read(magic, 4) != 4 || magic[0] != 0 || magic[1] != 0) fail(path, "not an IDX file (bad magic)");
  Sample s{};
  if (!idx_sample(magic[2], &s)) {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02X", magic[2]);
    fail(path, std::string("not an IDX file or unsupported IDX element type ") + code);
  }
  const int ndim = magic[3];
  if (ndim == 1) fail(path, "is a 1-D IDX file (labels?), not images");
  if (ndim < 2 || ndim > 3)
    fail(path, "IDX file has " + std::to_string(ndim) + " dimensions; expected images (3) or vectors (2)");
  unsigned char head[12];
  if (in.read(head, static_cast<size_t>(4 * ndim)) != static_cast<size_t>(4 * ndim)) fail(path, "truncated IDX header");
  std::vector<int64_t> dims;
  for (int i = 0; i < ndim; ++i) dims.push_back(be32(head + 4 * i));
  checked_count(path, dims, sample_size(s));
  const std::vector<int64_t> item(dims.begin() + 1, dims.end());
  int64_t d = 1;
  for (int64_t x : item) d *= x;
  if (d == 0) fail(path, "IDX items hold no values");
  int64_t n = dims[0];
  if (opt.max_rows >= 0) n = std::min(n, opt.max_rows);

  // The file must be able to hold the rows read before they are allocated:
  // raw data byte for byte, gzip data up to deflate's largest expansion.
  const size_t size = sample_size(s), total = static_cast<size_t>(n * d);
  const uint64_t header = 4 + 4 * static_cast<uint64_t>(ndim);
  std::error_code ec;
  const uint64_t file_size = fs::file_size(path, ec);
  if (!ec) {
    const std::string what = std::to_string(n) + " items of " + std::to_string(d) + " " + sample_name(s) + " values";
    if (is_gzip(path)) check_announced(path, what, uint64_t{total} * size, file_size, kDeflateMaxRatio);
    else
      check_announced(path, what, uint64_t{total} * size, file_size > header ? file_size - header : 0, 1);
  }

  // Decompress in bounded chunks straight into the float matrix.
  const size_t chunk = (size_t{4} << 20) / size;
  std::vector<float> v;
  allocate(path, v, total, std::to_string(n) + " x " + std::to_string(d) + " float32 values");
  std::vector<unsigned char> raw(std::min(total, chunk) * size);
  for (size_t done = 0; done < total;) {
    const size_t want = std::min(chunk, total - done);
    const size_t got = in.read(raw.data(), want * size);
    if (got != want * size)
      fail(path, "truncated: header announces " + std::to_string(dims[0]) + " items of " + std::to_string(d) +
                     " values but the data ends after item " +
                     std::to_string((done + got / size) / static_cast<size_t>(d)));
    convert_samples(raw.data(), s, true, want, v.data() + done);
    done += want;
  }
  Dataset ds(n, d, std::move(v));
  ds.item_shape = item;
  ds.source_dtype = sample_name(s);
  ds.format = "idx";

  // MNIST convention: X-images-idx3-ubyte[.gz] beside X-labels-idx1-ubyte[.gz].
  const fs::path p(path);
  std::string name = p.filename().string();
  const std::string images = "images-idx3-ubyte", labels = "labels-idx1-ubyte";
  if (auto pos = name.find(images); pos != std::string::npos) {
    name.replace(pos, images.size(), labels);
    const bool gz = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
    const std::string other = gz ? name.substr(0, name.size() - 3) : name + ".gz";
    for (const auto& candidate : {name, other}) {
      ds.labels = read_labels((p.parent_path() / candidate).string(), n);
      if (!ds.labels.empty()) break;
    }
  }
  return ds;
}

}  // namespace manifold::io
