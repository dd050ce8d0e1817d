// Helpers shared by the dataset readers.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "manifold/error.h"
#include "manifold/printable.h"
#include "readers.h"

namespace manifold::io {

void fail(const std::string& path, const std::string& what) { throw Error(printable_path(path) + ": " + what); }

size_t sample_size(Sample s) {
  switch (s) {
    case Sample::u8:
    case Sample::i8: return 1;
    case Sample::u16:
    case Sample::i16:
    case Sample::f16: return 2;
    case Sample::u32:
    case Sample::i32:
    case Sample::f32: return 4;
    case Sample::i64:
    case Sample::f64: return 8;
  }
  return 0;
}

const char* sample_name(Sample s) {
  switch (s) {
    case Sample::u8: return "uint8";
    case Sample::i8: return "int8";
    case Sample::u16: return "uint16";
    case Sample::i16: return "int16";
    case Sample::u32: return "uint32";
    case Sample::i32: return "int32";
    case Sample::i64: return "int64";
    case Sample::f16: return "float16";
    case Sample::f32: return "float32";
    case Sample::f64: return "float64";
  }
  return "?";
}

bool sample_is_float(Sample s) { return s == Sample::f16 || s == Sample::f32 || s == Sample::f64; }

namespace {

// IEEE 754 binary16 -> binary32, exact for every value including subnormals,
// infinities and NaN (MRC mode 12 and float16 .npy are stored this way).
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class T>
void convert_as(const unsigned char* src, bool swap, size_t count, float* dst) {
  unsigned char b[sizeof(T)];
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* p = src + i * sizeof(T);
    if (swap) {
      for (size_t j = 0; j < sizeof(T); ++j) b[j] = p[sizeof(T) - 1 - j];
      p = b;
    }
    T v;
    std::memcpy(&v, p, sizeof(T));
    dst[i] = static_cast<float>(v);
  }
}

}  // namespace

void convert_samples(const unsigned char* src, Sample s, bool swap, size_t count, float* dst) {
  switch (s) {
    case Sample::u8: return convert_as<uint8_t>(src, false, count, dst);
    case Sample::i8: return convert_as<int8_t>(src, false, count, dst);
    case Sample::u16: return convert_as<uint16_t>(src, swap, count, dst);
    case Sample::i16: return convert_as<int16_t>(src, swap, count, dst);
    case Sample::u32: return convert_as<uint32_t>(src, swap, count, dst);
    case Sample::i32: return convert_as<int32_t>(src, swap, count, dst);
    case Sample::i64: return convert_as<int64_t>(src, swap, count, dst);
    case Sample::f32: return convert_as<float>(src, swap, count, dst);
    case Sample::f64: return convert_as<double>(src, swap, count, dst);
    case Sample::f16:
      for (size_t i = 0; i < count; ++i) {
        const unsigned char* p = src + 2 * i;
        dst[i] = half_to_float(swap ? static_cast<uint16_t>(p[0] << 8 | p[1])
                                    : static_cast<uint16_t>(p[1] << 8 | p[0]));
      }
      return;
  }
}

Dataset mapped_float32(const std::string& path, uint64_t offset, int64_t n, int64_t d, const std::string& where) {
  size_t size = 0;
  auto map = map_file(path, &size);
  if (size < offset + static_cast<size_t>(n * d) * sizeof(float)) fail(where, "truncated while reading");
  const float* base = reinterpret_cast<const float*>(static_cast<const char*>(map.get()) + offset);
  return Dataset(n, d, base, std::move(map));
}

void read_samples(const std::string& path, uint64_t offset, Sample s, bool swap, size_t count, float* dst) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  const size_t size = sample_size(s);
  const size_t chunk = (size_t{4} << 20) / size;  // samples per read: bounded extra memory
  std::vector<unsigned char> buf(std::min(count, chunk) * size);
  size_t done = 0;
  while (done < count) {
    const size_t n = std::min(chunk, count - done);
    size_t got = 0;
    while (got < n * size) {
      ssize_t r = ::pread(fd, buf.data() + got, n * size - got, static_cast<off_t>(offset + done * size + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        const int err = errno;
        ::close(fd);
        if (r < 0) fail(path, std::string("read failed (") + std::strerror(err) + ")");
        fail(path, "truncated: the file ends " + std::to_string((count - done) * size - got) +
                       " bytes before the end of the data its header announces");
      }
      got += static_cast<size_t>(r);
    }
    convert_samples(buf.data(), s, swap, n, dst + done);
    done += n;
  }
  ::close(fd);
}

namespace {
struct Mapping {
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
};
}  // namespace

std::shared_ptr<const void> map_file(const std::string& path, size_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, "cannot stat");
  }
  auto m = std::make_shared<Mapping>();
  m->size = static_cast<size_t>(st.st_size);
  if (m->size > 0) m->addr = mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m->size > 0 && m->addr == MAP_FAILED) fail(path, std::string("cannot memory-map (") + std::strerror(errno) + ")");
  *size = m->size;
  // The aliasing constructor hands out the mapped address while keeping the
  // Mapping (and so the map) alive.
  return std::shared_ptr<const void>(m, m->size ? m->addr : nullptr);
}

std::string bytes_text(uint64_t bytes) {
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return std::to_string(bytes) + " bytes (" + gib + ")";
}

void check_announced(const std::string& path, const std::string& what, uint64_t announced, uint64_t stored,
                     uint64_t max_ratio) {
  // stored * max_ratio saturates instead of wrapping.
  const uint64_t most = stored > UINT64_MAX / max_ratio ? UINT64_MAX : stored * max_ratio;
  if (announced <= most) return;
  const std::string room = max_ratio == 1 ? "the file holds " + std::to_string(stored) + " bytes for them"
                                          : "its " + std::to_string(stored) +
                                                " bytes of compressed data expand to at most " + std::to_string(most);
  fail(path, "truncated or corrupt: " + what + " need " + bytes_text(announced) + " but " + room);
}

int64_t checked_count(const std::string& path, const std::vector<int64_t>& dims, size_t sample_bytes) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  // The product of the non-zero dimensions is bounded too: with N = 0 the
  // callers still multiply the item's dimensions.
  int64_t c = 1, nonzero = 1;
  for (int64_t d : dims) {
    if (d < 0) fail(path, "negative dimension " + std::to_string(d) + " in the header");
    if (d != 0 && nonzero > kLimit / static_cast<int64_t>(sample_bytes) / d)
      fail(path, "header announces an impossibly large array (corrupt header?)");
    if (d != 0) nonzero *= d;
    c *= d;
  }
  return c;
}

float* ImageStack::add(const std::string& path, const std::string& where, const std::string& label, int64_t w,
                       int64_t h, const std::string& type) {
  if (w <= 0 || h <= 0) fail(path, where + " has no pixels (" + std::to_string(w) + "x" + std::to_string(h) + ")");
  if (count == 0) {
    width = w;
    height = h;
    dtype = type;
    first = label;
  } else if (w != width || h != height) {
    fail(path, where + " is " + std::to_string(w) + "x" + std::to_string(h) + " pixels but " + first + " is " +
                   std::to_string(width) + "x" + std::to_string(height) +
                   " (width x height); all images must have the same size");
  } else if (type != dtype) {
    fail(path, where + " holds " + type + " samples but " + first + " holds " + dtype +
                   "; all images must have the same sample type");
  }
  const size_t d = static_cast<size_t>(w * h);
  // The first reservation is a guess (every expected image the same size):
  // when it does not fit, the values grow image by image instead, and only a
  // real shortage of memory fails, naming the file and the size.
  if (count == 0) {
    int64_t n = std::max<int64_t>(expected, 1);
    if (max_images >= 0) n = std::min(n, max_images);
    try {
      values.reserve(static_cast<size_t>(std::max<int64_t>(n, 1)) * d);
    } catch (const std::exception&) {
    }
  } else if (values.size() + d > values.capacity()) {
    try {
      values.reserve(std::max(values.size() * 2, values.size() + d));
    } catch (const std::exception&) {
    }
  }
  allocate(path, values, values.size() + d,
           where + " (" + std::to_string(w) + "x" + std::to_string(h) + " float32 values)");
  ++count;
  return values.data() + values.size() - d;
}

Dataset ImageStack::finish(const std::string& format) && {
  if (count == 0) return {};
  Dataset ds(count, width * height, std::move(values));
  ds.item_shape = {height, width};
  ds.source_dtype = dtype;
  ds.format = format;
  return ds;
}

}  // namespace manifold::io
