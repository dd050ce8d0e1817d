// Dataset readers: dispatch by file type, .npy (memory-mapped when float32)
// and MNIST IDX (plain or gzip).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>

#include "manifold/dataset.h"
#include "manifold/error.h"
#include "manifold/npy.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw Error(path + ": " + what); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct MappedFile {
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~MappedFile() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
};

Dataset load_npy(const std::string& path, const ReadOptions& opt) {
  npy::Header h = npy::read_header(path);
  if (h.shape.size() < 2 || h.shape.size() > 3)
    fail(path, "expected an N x d or N x h x w array, got " + std::to_string(h.shape.size()) + " dimensions");
  if (h.fortran_order) fail(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  static const char* supported[] = {"<f4", "<f8", "|u1", "<u2", "<i2", "<i4", "|i1", "<u1"};
  bool ok = false;
  for (auto s : supported) ok |= h.descr == s;
  if (!ok) fail(path, "unsupported dtype '" + h.descr + "' (float32/64, uint8/16, int16/32)");
  int64_t n = h.shape[0];
  int64_t d = h.shape[1] * (h.shape.size() == 3 ? h.shape[2] : 1);
  if (opt.max_rows >= 0) n = std::min(n, opt.max_rows);
  std::vector<int64_t> item(h.shape.begin() + 1, h.shape.end());
  const std::string dtype = h.descr == "<f4" ? "float32" : h.descr == "<f8" ? "float64" : h.descr == "|u1" || h.descr == "<u1" ? "uint8"
                          : h.descr == "<u2" ? "uint16" : h.descr == "<i2" ? "int16" : h.descr == "<i4" ? "int32" : "int8";
  Dataset ds;
  if (h.descr == "<f4") {
    // float32: map the file instead of copying it.
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) fail(path, "cannot open (" + std::string(std::strerror(errno)) + ")");
    struct stat st {};
    fstat(fd, &st);
    auto map = std::make_shared<MappedFile>();
    map->size = static_cast<size_t>(st.st_size);
    map->addr = mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map->addr == MAP_FAILED) fail(path, "cannot memory-map");
    const char* base = static_cast<const char*>(map->addr) + h.data_offset;
    if (reinterpret_cast<uintptr_t>(base) % alignof(float) != 0) fail(path, "misaligned float32 data");
    ds = Dataset(n, d, reinterpret_cast<const float*>(base), map);
  } else {
    std::vector<float> v = npy::read<float>(path);
    v.resize(static_cast<size_t>(n * d));
    ds = Dataset(n, d, std::move(v));
  }
  ds.item_shape = item;
  ds.source_dtype = dtype;
  ds.format = "npy";
  return ds;
}

// Reads the whole (optionally gzip-compressed) file.
std::vector<unsigned char> read_maybe_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail(path, "cannot open");
  std::vector<unsigned char> out;
  unsigned char buf[1 << 16];
  for (;;) {
    int got = gzread(f, buf, sizeof buf);
    if (got < 0) {
      gzclose(f);
      fail(path, "corrupt gzip data");
    }
    if (got == 0) break;
    out.insert(out.end(), buf, buf + got);
  }
  gzclose(f);
  return out;
}

uint32_t be32(const unsigned char* p) { return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3]; }

std::vector<int32_t> load_idx_labels(const std::string& path, int64_t n) {
  std::vector<int32_t> labels;
  if (!fs::exists(path)) return labels;
  auto raw = read_maybe_gz(path);
  if (raw.size() < 8 || be32(raw.data()) != 0x00000801) return labels;
  int64_t count = be32(raw.data() + 4);
  if (count < n || raw.size() < static_cast<size_t>(8 + count)) return labels;
  labels.assign(raw.begin() + 8, raw.begin() + 8 + n);
  return labels;
}

Dataset load_idx(const std::string& path, const ReadOptions& opt) {
  auto raw = read_maybe_gz(path);
  if (raw.size() < 4 || raw[0] != 0 || raw[1] != 0) fail(path, "not an IDX file (bad magic)");
  const int type = raw[2], ndim = raw[3];
  if (type != 0x08) fail(path, "IDX element type 0x" + std::to_string(type) + " is not supported (only unsigned bytes)");
  if (ndim < 2 || ndim > 3) fail(path, "IDX file has " + std::to_string(ndim) + " dimensions; expected images (3) or vectors (2)");
  if (raw.size() < static_cast<size_t>(4 + 4 * ndim)) fail(path, "truncated IDX header");
  std::vector<int64_t> dims;
  for (int i = 0; i < ndim; ++i) dims.push_back(be32(raw.data() + 4 + 4 * i));
  int64_t n = dims[0];
  int64_t d = 1;
  for (int i = 1; i < ndim; ++i) d *= dims[i];
  const size_t offset = static_cast<size_t>(4 + 4 * ndim);
  if (raw.size() < offset + static_cast<size_t>(n * d))
    fail(path, "truncated: header says " + std::to_string(n) + " items of " + std::to_string(d) + " bytes");
  if (opt.max_rows >= 0) n = std::min(n, opt.max_rows);
  std::vector<float> v(static_cast<size_t>(n * d));
  for (size_t i = 0; i < v.size(); ++i) v[i] = raw[offset + i];
  Dataset ds(n, d, std::move(v));
  ds.item_shape.assign(dims.begin() + 1, dims.end());
  ds.source_dtype = "uint8";
  ds.format = "idx";
  // MNIST convention: X-images-idx3-ubyte beside X-labels-idx1-ubyte.
  std::string lp = path;
  if (auto pos = lp.rfind("images-idx3-ubyte"); pos != std::string::npos) {
    lp.replace(pos, std::strlen("images-idx3-ubyte"), "labels-idx1-ubyte");
    ds.labels = load_idx_labels(lp, n);
  }
  return ds;
}

}  // namespace

Dataset load_dataset(const std::string& path, const ReadOptions& opt) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path + ": no such file or directory");
  Dataset ds;
  std::string lower = path;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ends_with(lower, ".npy")) ds = load_npy(path, opt);
  else if (lower.find("idx3-ubyte") != std::string::npos || lower.find("idx2-ubyte") != std::string::npos ||
           ends_with(lower, ".idx") || ends_with(lower, ".idx.gz"))
    ds = load_idx(path, opt);
  else
    throw Error(path + ": unrecognised dataset format (expected .npy, *-idx3-ubyte[.gz], a PNG/TIFF folder, .tif, .mrc/.mrcs, .h5/.cxi)");
  if (ds.rows() == 0) throw Error(path + ": contains no images");
  ds.source = path;
  return ds;
}

}  // namespace manifold
