// Frames to 8-bit grey with one contrast rule for the whole movie, the PNG
// series writer, and the choice of format (see movie.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <csetjmp>
#include <filesystem>

#include <png.h>

#include "manifold/error.h"
#include "manifold/movie.h"
#include "manifold/output.h"

namespace fs = std::filesystem;

namespace manifold {

// Defined in video.cpp (FFmpeg) or as refusals there when the build has none.
std::string write_video(const std::string& path, MovieFormat format, const GreyFrames& frames, double fps);

namespace {

/// The value the percentiles are taken of: v, or log(1 + v - min).
struct ToneCurve {
  bool log = false;
  float min = 0;
  float operator()(float v) const { return log ? std::log1p(std::max(0.f, v - min)) : v; }
};

ToneCurve tone_curve(const TrajectoryFrames& frames, const MovieOptions& o) {
  ToneCurve t;
  t.log = o.log_scale;
  if (t.log && !frames.images.empty()) t.min = *std::min_element(frames.images.begin(), frames.images.end());
  return t;
}

/// Percentile p (0..100) of `v` (reordered), by nth_element.
float percentile(std::vector<float>& v, double p) {
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(std::llround(p / 100.0 * (v.size() - 1))));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

void check_options(const MovieOptions& o) {
  if (!(o.fps > 0) || !(o.fps <= 1000)) throw UsageError("--fps: must be a number in (0, 1000]");
  if (o.scale < 0 || o.scale > 64) throw UsageError("--scale: must be an integer from 0 (automatic) to 64");
  if (!(o.low_percentile >= 0 && o.low_percentile < o.high_percentile && o.high_percentile <= 100))
    throw UsageError("contrast: percentiles must satisfy 0 <= low < high <= 100");
}

// ---- PNG series ------------------------------------------------------------

struct PngBuffer {
  std::vector<uint8_t> bytes;
  std::string error;
};

void png_append(png_structp png, png_bytep data, png_size_t size) {
  auto* b = static_cast<PngBuffer*>(png_get_io_ptr(png));
  b->bytes.insert(b->bytes.end(), data, data + size);
}
void png_flush(png_structp) {}
void png_fail(png_structp png, png_const_charp msg) {
  static_cast<PngBuffer*>(png_get_error_ptr(png))->error = msg;
  png_longjmp(png, 1);
}
void png_ignore(png_structp, png_const_charp) {}

bool encode_png_rows(png_structp png, png_infop info, const uint8_t* pixels, int width, int height) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_GRAY,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y) png_write_row(png, const_cast<png_bytep>(pixels + static_cast<size_t>(y) * width));
  png_write_end(png, info);
  return true;
}

/// One 8-bit grey image as PNG bytes.
std::vector<uint8_t> encode_png(const uint8_t* pixels, int width, int height, const std::string& name) {
  PngBuffer buffer;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &buffer, png_fail, png_ignore);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw Error(name + ": libpng could not start");
  }
  png_set_write_fn(png, &buffer, png_append, png_flush);
  const bool ok = encode_png_rows(png, info, pixels, width, height);
  png_destroy_write_struct(&png, &info);
  if (!ok) throw Error(name + ": " + buffer.error);
  return std::move(buffer.bytes);
}

std::string frame_name(size_t i, size_t count) {
  const int digits = std::max(4, static_cast<int>(std::to_string(count).size()));
  char name[64];
  std::snprintf(name, sizeof name, "frame_%0*zu.png", digits, i + 1);
  return name;
}

std::string write_png_series(const std::string& dir, const GreyFrames& frames, const nlohmann::json& info) {
  check_movie_output(dir, MovieFormat::PngSeries);
  OutputTransaction tx(dir);
  for (size_t i = 0; i < frames.count; ++i) {
    const std::string name = frame_name(i, frames.count);
    const std::vector<uint8_t> png = encode_png(frames.frame(i), frames.width, frames.height, dir + "/" + name);
    write_file_atomically(tx.path(name), png.data(), png.size());
  }
  if (!info.is_null()) write_text_file(tx.path("trajectory.json"), info.dump(2) + "\n");
  tx.commit();
  return "png";
}

}  // namespace

int movie_scale(int height, int width, int requested) {
  if (requested > 0) return requested;
  const int longer = std::max(1, std::max(height, width));
  return std::clamp((256 + longer - 1) / longer, 1, 16);
}

std::pair<float, float> movie_contrast(const TrajectoryFrames& frames, const MovieOptions& o) {
  check_options(o);
  if (frames.images.empty()) throw UsageError("trajectory: no frames to show");
  const ToneCurve tone = tone_curve(frames, o);
  // At most ~4M samples, evenly strided: the percentiles of a large movie
  // to well within one grey level, without copying every pixel.
  const size_t n = frames.images.size(), stride = std::max<size_t>(1, n / (size_t{1} << 22));
  std::vector<float> v;
  v.reserve(n / stride + 1);
  for (size_t i = 0; i < n; i += stride)
    if (std::isfinite(frames.images[i])) v.push_back(tone(frames.images[i]));
  if (v.empty()) return {0.f, 1.f};
  float lo = percentile(v, o.low_percentile), hi = percentile(v, o.high_percentile);
  if (!(hi > lo)) {  // a flat movie: its one value mid-grey
    lo -= 0.5f;
    hi = lo + 1.f;
  }
  return {lo, hi};
}

GreyFrames render_frames(const TrajectoryFrames& frames, const MovieOptions& o) {
  check_options(o);
  const auto [lo, hi] = movie_contrast(frames, o);
  const ToneCurve tone = tone_curve(frames, o);
  GreyFrames g;
  g.scale = movie_scale(frames.height, frames.width, o.scale);
  g.width = frames.width * g.scale;
  g.height = frames.height * g.scale;
  g.count = frames.count();
  g.low = lo;
  g.high = hi;
  char rule[160];
  std::snprintf(rule, sizeof rule, "%s%g and %g percentiles of every pixel of every frame -> 0 and 255",
                o.log_scale ? "log(1 + v - min), then its " : "", o.low_percentile, o.high_percentile);
  g.contrast_rule = rule;
  const size_t plane = static_cast<size_t>(g.width) * g.height;
  g.pixels.resize(g.count * plane);
  const float gain = 255.f / (hi - lo);
  for (size_t f = 0; f < g.count; ++f) {
    const float* src = frames.frame(f);
    uint8_t* dst = g.pixels.data() + f * plane;
    for (int y = 0; y < g.height; ++y) {
      const float* row = src + static_cast<size_t>(y / g.scale) * frames.width;
      uint8_t* out = dst + static_cast<size_t>(y) * g.width;
      for (int x = 0; x < g.width; ++x) {
        const float v = row[x / g.scale];
        const float t = std::isfinite(v) ? (tone(v) - lo) * gain : 0.f;
        out[x] = static_cast<uint8_t>(std::lround(std::clamp(t, 0.f, 255.f)));
      }
    }
  }
  if (o.log_scale) {  // report the range in frame values
    g.low = std::expm1(lo) + tone.min;
    g.high = std::expm1(hi) + tone.min;
  }
  return g;
}

void check_movie_output(const std::string& path, MovieFormat format) {
  std::error_code ec;
  if (format == MovieFormat::PngSeries) {
    if (fs::exists(path, ec) && !fs::is_directory(path, ec)) throw UsageError(path + ": exists and is not a folder");
    if (fs::is_directory(path, ec) && !fs::is_empty(path, ec))
      throw UsageError(path + ": the folder is not empty (a PNG series needs a new or empty folder)");
    check_output_dir(path);
    return;
  }
  if (fs::is_directory(path, ec)) throw UsageError(path + ": is a folder, not a movie file");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw UsageError(path + ": the folder " + parent.string() + " does not exist");
  check_output_file(path);  // its folder takes a new file
}

MovieFormat movie_format_for(const std::string& path) {
  std::error_code ec;
  if (path.empty()) throw UsageError("-o: the output path is empty; name a movie.gif, a movie.mp4 or a folder");
  if (fs::is_directory(path, ec)) return MovieFormat::PngSeries;
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".gif") return MovieFormat::Gif;
  if (ext == ".mp4") return MovieFormat::Mp4;
  if (ext.empty()) return MovieFormat::PngSeries;
  throw UsageError(path + ": unknown movie format '" + ext + "' (movie.gif, movie.mp4 or a folder for PNG frames)");
}

std::string to_string(MovieFormat format) {
  switch (format) {
    case MovieFormat::PngSeries: return "png";
    case MovieFormat::Gif: return "gif";
    case MovieFormat::Mp4: return "mp4";
  }
  return "?";
}

std::string write_movie(const std::string& path, MovieFormat format, const GreyFrames& frames, double fps,
                        const nlohmann::json& info) {
  if (frames.count == 0) throw UsageError("trajectory: no frames to write");
  if (!(fps > 0) || !(fps <= 1000)) throw UsageError("--fps: must be a number in (0, 1000]");
  if (format == MovieFormat::PngSeries) return write_png_series(path, frames, info);
  check_movie_output(path, format);
  return write_video(path, format, frames, fps);
}

nlohmann::json trajectory_metadata(const TrajectoryFrames& frames, const GreyFrames& grey, double fps) {
  nlohmann::json bins = nlohmann::json::array();
  for (const TrajectoryBin& b : frames.bins)
    bins.push_back({{"count", b.rows.size()},
                    {"mean_position", b.mean_position},
                    {"mean_coordinate", b.mean_coordinate},
                    {"rows", b.rows}});
  return {{"format", "manifold-trajectory"},
          {"version", 1},
          {"order", frames.description},
          {"frames", frames.count()},
          {"image", {frames.height, frames.width}},
          {"scale", grey.scale},
          {"fps", fps},
          {"contrast", {{"rule", grey.contrast_rule}, {"low", grey.low}, {"high", grey.high}}},
          {"bins", bins}};
}

}  // namespace manifold
