// TIFF through libtiff: every page (directory) is one image; reduced-resolution
// pages (thumbnails) are skipped. One channel only, with 8/16/32-bit integer
// or 16/32/64-bit float samples, stripped or tiled, any codec libtiff has.
#include <tiffio.h>

#include <cstdarg>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "readers.h"

namespace manifold::io {

namespace {

// libtiff's messages go to our collector instead of stderr: the first error
// explains a failure in the one line we throw.
struct TiffMessages {
  std::string first_error;
};

int on_tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* m = static_cast<TiffMessages*>(user);
  if (m && m->first_error.empty()) {
    char buf[300];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    m->first_error = std::string(module ? module : "libtiff") + ": " + buf;
  }
  return 1;
}

int on_tiff_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};

bool tiff_sample(uint16_t format, uint16_t bits, Sample* s) {
  if (format == SAMPLEFORMAT_UINT) {
    if (bits == 8) *s = Sample::u8;
    else if (bits == 16)
      *s = Sample::u16;
    else if (bits == 32)
      *s = Sample::u32;
    else
      return false;
  } else if (format == SAMPLEFORMAT_INT) {
    if (bits == 8) *s = Sample::i8;
    else if (bits == 16)
      *s = Sample::i16;
    else if (bits == 32)
      *s = Sample::i32;
    else
      return false;
  } else if (format == SAMPLEFORMAT_IEEEFP) {
    if (bits == 16) *s = Sample::f16;
    else if (bits == 32)
      *s = Sample::f32;
    else if (bits == 64)
      *s = Sample::f64;
    else
      return false;
  } else {
    return false;
  }
  return true;
}

// The most bytes one stored byte of `compression` can decode to: raw data
// 1; PackBits 128 (a 2-byte run repeats 1 byte 128 times, counted loosely);
// deflate 1032; LZW 4096 (one code of 9 or more bits stands for at most 4096
// bytes). Codecs with no small worst case (JPEG, LZMA, ZSTD, WebP, ...) get
// 2^16: still far below what a corrupt header of a few bytes asks for.
uint64_t max_expansion(uint16_t compression) {
  switch (compression) {
    case COMPRESSION_NONE: return 1;
    case COMPRESSION_PACKBITS: return 128;
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE: return kDeflateMaxRatio;
    case COMPRESSION_LZW: return 4096;
    default: return uint64_t{1} << 16;
  }
}

// Checks the strips (or tiles) of the current page against the file before
// its pixels are allocated: every offset past the file header (an offset of 0
// would read the header's bytes as pixels), and the stored bytes within the
// file able to hold the `decoded` bytes of the page and of one strip or tile.
void check_page_storage(const std::string& path, const std::string& where, TIFF* tif, uint64_t file_size,
                        uint64_t decoded) {
  const bool tiled = TIFFIsTiled(tif);
  const uint32_t count = tiled ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
  const uint64_t* offsets = nullptr;
  const uint64_t* sizes = nullptr;
  if (!TIFFGetField(tif, tiled ? TIFFTAG_TILEOFFSETS : TIFFTAG_STRIPOFFSETS, &offsets) ||
      !TIFFGetField(tif, tiled ? TIFFTAG_TILEBYTECOUNTS : TIFFTAG_STRIPBYTECOUNTS, &sizes) || !offsets || !sizes)
    fail(path, where + ": no " + (tiled ? "tile" : "strip") + " offsets or byte counts (corrupt TIFF)");
  const uint64_t header = TIFFIsBigTIFF(tif) ? 16 : 8;
  uint64_t stored = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (sizes[i] == 0) continue;
    if (offsets[i] < header)
      fail(path, where + ": " + (tiled ? "tile " : "strip ") + std::to_string(i) + " starts at byte " +
                     std::to_string(offsets[i]) + ", inside the TIFF header (corrupt " +
                     (tiled ? "TileOffsets" : "StripOffsets") + ")");
    if (offsets[i] < file_size) stored += std::min(sizes[i], file_size - offsets[i]);
  }
  uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  const uint64_t piece = static_cast<uint64_t>(tiled ? TIFFTileSize64(tif) : TIFFStripSize64(tif));
  check_announced(path, where + "'s pixels", std::max(decoded, piece), std::min(stored, file_size),
                  max_expansion(compression));
}

void check_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  char m[4] = {0, 0, 0, 0};
  in.read(m, 4);
  const bool ok = (m[0] == 'I' && m[1] == 'I' && (m[2] == 42 || m[2] == 43) && m[3] == 0) ||
                  (m[0] == 'M' && m[1] == 'M' && m[2] == 0 && (m[3] == 42 || m[3] == 43));
  if (!ok) fail(path, "not a TIFF file (bad magic)");
}

}  // namespace

void append_tiff(const std::string& path, ImageStack& stack, bool in_folder) {
  check_magic(path);
  TiffMessages messages;
  auto why = [&messages] { return messages.first_error.empty() ? std::string() : " (" + messages.first_error + ")"; };
  std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> options(TIFFOpenOptionsAlloc(), &TIFFOpenOptionsFree);
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), on_tiff_error, &messages);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), on_tiff_warning, nullptr);
  std::unique_ptr<TIFF, TiffCloser> tif(TIFFOpenExt(path.c_str(), "r", options.get()));
  if (!tif) fail(path, "corrupt TIFF" + why());
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  const tdir_t pages = TIFFNumberOfDirectories(tif.get());
  const bool single = pages == 1;
  if (stack.count == 0 && !in_folder) stack.expected = pages;

  for (int page = 1;; ++page) {
    if (stack.full()) break;
    uint32_t subfile = 0;
    TIFFGetField(tif.get(), TIFFTAG_SUBFILETYPE, &subfile);
    if (!(subfile & FILETYPE_REDUCEDIMAGE)) {
      // Messages speak of pages only where there are several.
      const std::string where = single ? "image" : "page " + std::to_string(page);
      const std::string label = in_folder ? (single ? path : where + " of " + path) : where;
      uint32_t w = 0, h = 0;
      uint16_t bits = 1, spp = 1, format = SAMPLEFORMAT_UINT, photometric = PHOTOMETRIC_MINISBLACK;
      if (!TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &h))
        fail(path, where + ": no image size" + why());
      TIFFGetFieldDefaulted(tif.get(), TIFFTAG_BITSPERSAMPLE, &bits);
      TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLESPERPIXEL, &spp);
      TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLEFORMAT, &format);
      TIFFGetField(tif.get(), TIFFTAG_PHOTOMETRIC, &photometric);
      if (spp != 1)
        fail(path,
             where + " has " + std::to_string(spp) + " samples per pixel; only one-channel (gray) TIFF is supported");
      if (photometric == PHOTOMETRIC_PALETTE)
        fail(path, where + " is a palette (colour-mapped) image; only gray TIFF is supported");
      Sample s{};
      if (!tiff_sample(format, bits, &s)) {
        const char* kind = format == SAMPLEFORMAT_INT      ? "signed integer"
                           : format == SAMPLEFORMAT_IEEEFP ? "float"
                           : format == SAMPLEFORMAT_UINT   ? "unsigned integer"
                                                           : "complex or unknown";
        fail(path, where + " has " + std::to_string(bits) + "-bit " + kind +
                       " samples; supported: 8/16/32-bit integer, 16/32/64-bit float");
      }
      const size_t size = sample_size(s);
      if (!ec) check_page_storage(path, where, tif.get(), file_size, uint64_t{w} * h * size);
      float* dst = stack.add(path, where, label, w, h, sample_name(s));
      if (TIFFIsTiled(tif.get())) {
        uint32_t tw = 0, th = 0;
        TIFFGetField(tif.get(), TIFFTAG_TILEWIDTH, &tw);
        TIFFGetField(tif.get(), TIFFTAG_TILELENGTH, &th);
        const tmsize_t tile_bytes = TIFFTileSize(tif.get());
        if (tw == 0 || th == 0 || tile_bytes < static_cast<tmsize_t>(size_t{tw} * th * size))
          fail(path, where + ": corrupt tile layout" + why());
        std::vector<unsigned char> buf;
        allocate(path, buf, static_cast<size_t>(tile_bytes), where + "'s tile buffer");
        for (uint32_t y = 0; y < h; y += th)
          for (uint32_t x = 0; x < w; x += tw) {
            if (TIFFReadTile(tif.get(), buf.data(), x, y, 0, 0) < 0)
              fail(path, where + ": corrupt or truncated tile" + why());
            const uint32_t rows = std::min(th, h - y), cols = std::min(tw, w - x);
            for (uint32_t r = 0; r < rows; ++r)
              convert_samples(buf.data() + size_t{r} * tw * size, s, false, cols, dst + (size_t{y} + r) * w + x);
          }
      } else {
        uint32_t rows_per_strip = h;
        TIFFGetFieldDefaulted(tif.get(), TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
        if (rows_per_strip == 0 || rows_per_strip > h) rows_per_strip = h;
        const tmsize_t strip_bytes = TIFFStripSize(tif.get());
        if (strip_bytes < static_cast<tmsize_t>(size_t{rows_per_strip} * w * size))
          fail(path, where + ": corrupt strip layout" + why());
        std::vector<unsigned char> buf;
        allocate(path, buf, static_cast<size_t>(strip_bytes), where + "'s strip buffer");
        const uint32_t strips = (h + rows_per_strip - 1) / rows_per_strip;
        for (uint32_t i = 0; i < strips; ++i) {
          const uint32_t rows = std::min(rows_per_strip, h - i * rows_per_strip);
          const tmsize_t need = static_cast<tmsize_t>(size_t{rows} * w * size);
          const tmsize_t got = TIFFReadEncodedStrip(tif.get(), i, buf.data(), need);
          if (got < need) fail(path, where + ": corrupt or truncated image data" + why());
          convert_samples(buf.data(), s, false, size_t{rows} * w, dst + size_t{i} * rows_per_strip * w);
        }
      }
    }
    if (stack.full() || !TIFFReadDirectory(tif.get())) break;
  }
  // A broken link to the next page ends TIFFReadDirectory like the last page
  // does; only the recorded error tells the two apart.
  if (!messages.first_error.empty()) fail(path, "corrupt TIFF" + why());
}

int64_t tiff_image_count(const std::string& path) {
  check_magic(path);
  TiffMessages messages;
  std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> options(TIFFOpenOptionsAlloc(), &TIFFOpenOptionsFree);
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), on_tiff_error, &messages);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), on_tiff_warning, nullptr);
  std::unique_ptr<TIFF, TiffCloser> tif(TIFFOpenExt(path.c_str(), "r", options.get()));
  if (!tif) fail(path, "corrupt TIFF" + (messages.first_error.empty() ? "" : " (" + messages.first_error + ")"));
  // append_tiff's rule: every page but the reduced-resolution ones.
  int64_t images = 0;
  do {
    uint32_t subfile = 0;
    TIFFGetField(tif.get(), TIFFTAG_SUBFILETYPE, &subfile);
    images += (subfile & FILETYPE_REDUCEDIMAGE) ? 0 : 1;
  } while (TIFFReadDirectory(tif.get()));
  return images;
}

Dataset read_tiff(const std::string& path, const ReadOptions& opt) {
  ImageStack stack;
  stack.max_images = opt.max_rows;
  if (!stack.full()) append_tiff(path, stack, false);
  return std::move(stack).finish("tiff");
}

}  // namespace manifold::io
