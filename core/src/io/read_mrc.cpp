// MRC / MRCS (MRC2014): a 1024-byte header, an optional extended header of
// NSYMBT bytes (skipped: it holds per-section metadata we do not use), then nz
// sections of ny rows of nx samples. Each section is one image (one row).
// Mode 2 (float32) in the host byte order is memory-mapped.
#include <algorithm>
#include <cstring>
#include <fstream>

#include "readers.h"

namespace manifold::io {

namespace {

constexpr size_t kHeader = 1024;

int32_t word(const unsigned char* h, size_t offset, bool big) {
  const unsigned char* p = h + offset;
  const uint32_t u = big ? (uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3])
                         : (uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0]);
  return static_cast<int32_t>(u);
}

bool supported_mode(int32_t mode) { return mode == 0 || mode == 1 || mode == 2 || mode == 6 || mode == 12; }
bool known_mode(int32_t mode) { return supported_mode(mode) || mode == 3 || mode == 4 || mode == 101; }

}  // namespace

Dataset read_mrc(const std::string& path, const ReadOptions& opt) {
  unsigned char h[kHeader];
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  in.read(reinterpret_cast<char*>(h), kHeader);
  if (static_cast<size_t>(in.gcount()) < kHeader)
    fail(path, "truncated: an MRC header is 1024 bytes, the file has " + std::to_string(in.gcount()) + " bytes");
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.close();

  const bool stamp = std::memcmp(h + 208, "MAP ", 4) == 0;
  // MACHST: 0x44 0x44 (or 0x44 0x41) little-endian, 0x11 0x11 big-endian. Old
  // writers leave it zero, so fall back to the byte order that gives a known mode.
  bool big = h[212] == 0x11;
  if (h[212] != 0x11 && h[212] != 0x44 && h[212] != 0x41 && !known_mode(word(h, 12, false)) &&
      known_mode(word(h, 12, true)))
    big = true;
  const int32_t nx = word(h, 0, big), ny = word(h, 4, big), nz = word(h, 8, big), mode = word(h, 12, big);
  const int32_t nsymbt = word(h, 92, big);
  if (!stamp && (!known_mode(mode) || nx <= 0 || ny <= 0 || nz < 0))
    fail(path, "not an MRC file (no 'MAP ' stamp at byte 208 and no sensible header)");
  if (!supported_mode(mode)) {
    const char* what = mode == 3     ? " (complex int16)"
                       : mode == 4   ? " (complex float32)"
                       : mode == 101 ? " (4-bit)"
                                     : " (unknown)";
    fail(path, "MRC mode " + std::to_string(mode) + what + " is not supported; expected mode 0, 1, 2, 6 or 12");
  }
  if (nx <= 0 || ny <= 0 || nz < 0)
    fail(path, "corrupt MRC header: nx, ny, nz = " + std::to_string(nx) + ", " + std::to_string(ny) + ", " +
                   std::to_string(nz));
  if (nsymbt < 0) fail(path, "corrupt MRC header: negative extended header size " + std::to_string(nsymbt));

  Sample s = mode == 0   ? Sample::i8
             : mode == 1 ? Sample::i16
             : mode == 2 ? Sample::f32
             : mode == 6 ? Sample::u16
                         : Sample::f16;
  // MRC2014 says mode 0 is signed; IMOD marks files whose bytes are unsigned by
  // its stamp (1146047817 at byte 152) with bit 0 of the flags at byte 156 clear.
  if (mode == 0 && word(h, 152, big) == 1146047817 && (word(h, 156, big) & 1) == 0) s = Sample::u8;

  const uint64_t offset = kHeader + static_cast<uint64_t>(nsymbt);
  const int64_t d = int64_t{nx} * ny;
  const int64_t total = checked_count(path, {nx, ny, nz}, sample_size(s));
  const uint64_t need = offset + static_cast<uint64_t>(total) * sample_size(s);
  if (file_size < need)
    fail(path, "truncated: header announces " + std::to_string(nz) + " sections of " + std::to_string(nx) + "x" +
                   std::to_string(ny) + " mode-" + std::to_string(mode) + " samples (" + std::to_string(need) +
                   " bytes with headers), the file has " + std::to_string(file_size) + " bytes");
  int64_t n = nz;
  if (opt.max_rows >= 0) n = std::min(n, opt.max_rows);

  Dataset ds;
  if (s == Sample::f32 && !big && offset % alignof(float) == 0 && n > 0) {
    ds = mapped_float32(path, offset, n, d, path);
  } else {
    std::vector<float> v;
    allocate(path, v, static_cast<size_t>(n * d), std::to_string(n) + " x " + std::to_string(d) + " float32 values");
    read_samples(path, offset, s, big, v.size(), v.data());
    ds = Dataset(n, d, std::move(v));
  }
  ds.item_shape = {ny, nx};
  ds.source_dtype = sample_name(s);
  ds.format = "mrc";
  return ds;
}

}  // namespace manifold::io
