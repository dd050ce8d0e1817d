// PNG through libpng. Gray stays as stored (8 or 16 bit; 1/2/4-bit gray is
// widened to 0..255 by libpng). Colour becomes one gray value per pixel, the
// Rec. 709 luma of the stored (gamma-encoded) samples,
//   Y = 0.2126 R + 0.7152 G + 0.0722 B,
// not rounded; palettes are expanded to RGB first; alpha is ignored.
//
// libpng reports errors by longjmp, which must not cross C++ frames with live
// destructors: the two functions that call setjmp hold only plain values, and
// everything with a destructor lives in their caller.
#include <png.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "readers.h"

namespace manifold::io {

namespace {

struct PngMessage {
  char text[200] = {0};
};

void on_png_error(png_structp png, png_const_charp msg) {
  auto* m = static_cast<PngMessage*>(png_get_error_ptr(png));
  std::snprintf(m->text, sizeof m->text, "%s", msg ? msg : "libpng error");
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngReader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

// `stored_row_bytes` receives the bytes of one row as the file stores it
// (before any expansion), with its filter byte.
bool png_read_header(png_structp png, png_infop info, FILE* f, uint64_t* stored_row_bytes) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_init_io(png, f);
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  const uint64_t bits_per_pixel = uint64_t{png_get_channels(png, info)} * static_cast<uint64_t>(depth);
  *stored_row_bytes = (uint64_t{png_get_image_width(png, info)} * bits_per_pixel + 7) / 8 + 1;
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  // PNG stores 16-bit samples big-endian.
  if (depth == 16 && std::endian::native == std::endian::little) png_set_swap(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

bool png_read_pixels(png_structp png, png_infop info, png_bytep* rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, info);
  return true;
}

}  // namespace

void append_png(const std::string& path, ImageStack& stack) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  unsigned char sig[8];
  if (std::fread(sig, 1, 8, f.get()) != 8 || png_sig_cmp(sig, 0, 8) != 0) fail(path, "not a PNG file (bad signature)");

  PngMessage message;
  PngReader r;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &message, on_png_error, on_png_warning);
  if (!r.png) fail(path, "cannot start libpng");
  r.info = png_create_info_struct(r.png);
  if (!r.info) fail(path, "cannot start libpng");
  uint64_t stored_row_bytes = 0;
  if (!png_read_header(r.png, r.info, f.get(), &stored_row_bytes))
    fail(path, std::string("corrupt PNG (") + message.text + ")");

  const int64_t w = png_get_image_width(r.png, r.info), h = png_get_image_height(r.png, r.info);
  // The image's deflate stream lies in the file: a size the file cannot hold
  // is refused before the pixels are allocated.
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (!ec)
    check_announced(path, std::to_string(w) + "x" + std::to_string(h) + " pixels",
                    stored_row_bytes * static_cast<uint64_t>(h), file_size, kDeflateMaxRatio);
  const int depth = png_get_bit_depth(r.png, r.info), channels = png_get_channels(r.png, r.info);
  const size_t row_bytes = png_get_rowbytes(r.png, r.info);
  if ((depth != 8 && depth != 16) || channels < 1 || channels > 4 ||
      row_bytes < static_cast<size_t>(w) * static_cast<size_t>(channels * depth / 8))
    fail(path, "unsupported PNG layout (" + std::to_string(depth) + "-bit, " + std::to_string(channels) + " channels)");

  std::vector<unsigned char> pixels;
  std::vector<png_bytep> rows;
  allocate(path, pixels, row_bytes * static_cast<size_t>(h),
           "the decoded " + std::to_string(w) + "x" + std::to_string(h) + " image");
  allocate(path, rows, static_cast<size_t>(h), "the image's row table");
  for (int64_t y = 0; y < h; ++y) rows[static_cast<size_t>(y)] = pixels.data() + static_cast<size_t>(y) * row_bytes;
  if (!png_read_pixels(r.png, r.info, rows.data()))
    fail(path, std::string("corrupt or truncated PNG (") + message.text + ")");

  float* dst = stack.add(path, "image", path, w, h, depth == 16 ? "uint16" : "uint8");
  for (int64_t y = 0; y < h; ++y) {
    const unsigned char* row = rows[static_cast<size_t>(y)];
    for (int64_t x = 0; x < w; ++x) {
      float c[3];
      const int take = channels >= 3 ? 3 : 1;
      for (int k = 0; k < take; ++k) {
        const size_t i = static_cast<size_t>(x * channels + k);
        if (depth == 16) {
          uint16_t v;
          std::memcpy(&v, row + 2 * i, 2);
          c[k] = v;
        } else {
          c[k] = row[i];
        }
      }
      dst[y * w + x] = channels >= 3 ? 0.2126f * c[0] + 0.7152f * c[1] + 0.0722f * c[2] : c[0];
    }
  }
}

Dataset read_png(const std::string& path, const ReadOptions& opt) {
  ImageStack stack;
  stack.max_images = opt.max_rows;
  if (!stack.full()) append_png(path, stack);
  return std::move(stack).finish("png");
}

}  // namespace manifold::io
