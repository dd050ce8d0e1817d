#pragma once
// A trajectory's frames as a movie: an 8-bit greyscale image series (PNG,
// through libpng), an animated GIF or an MP4 (through FFmpeg's libraries,
// when the build found them).
//
// Contrast is one rule for the whole movie, so brightness means the same in
// every frame: low and high are the 0.5th and 99.5th percentiles of every
// pixel of every frame (after log(1 + v - min) with `log_scale`), mapped to
// 0 and 255, values beyond them clipped. Small images are enlarged by an
// integer factor, each pixel a block (no smoothing of what was measured):
// `scale` 0 picks the smallest factor that brings the longer side to 256
// pixels or more (at most 16).
//
// Output is all-or-nothing: a movie is encoded in memory and written through
// a temporary renamed into place; a PNG series goes into a new (or empty)
// folder through an OutputTransaction, with trajectory.json beside the frames.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/trajectory.h"

namespace manifold {

struct MovieOptions {
  double fps = 10;         ///< frames per second (GIF: rounded to 1/100 s per frame)
  int scale = 0;           ///< integer enlargement, 0 = automatic (see above)
  bool log_scale = false;  ///< log(1 + v - min) before the percentiles
  double low_percentile = 0.5;
  double high_percentile = 99.5;
};

/// 8-bit greyscale frames, ready to encode.
struct GreyFrames {
  int width = 0, height = 0;
  size_t count = 0;
  std::vector<uint8_t> pixels;  ///< count x height x width
  float low = 0, high = 0;      ///< the contrast range used (in frame values, before log)
  std::string contrast_rule;    ///< how low and high were found, for trajectory.json
  int scale = 1;                ///< the enlargement used
  const uint8_t* frame(size_t i) const { return pixels.data() + i * static_cast<size_t>(width) * height; }
};

/// The shared contrast range of every frame (see above): {low, high}, high > low.
std::pair<float, float> movie_contrast(const TrajectoryFrames& frames, const MovieOptions& options);
/// The enlargement for an image of height x width under options.scale.
int movie_scale(int height, int width, int requested);
/// Frames contrast-scaled and enlarged. UsageError naming --fps/--scale for bad options.
GreyFrames render_frames(const TrajectoryFrames& frames, const MovieOptions& options);

enum class MovieFormat { PngSeries, Gif, Mp4 };
/// .gif -> Gif, .mp4 -> Mp4, no extension or an existing folder -> PngSeries;
/// another extension is a UsageError naming the path.
MovieFormat movie_format_for(const std::string& path);
std::string to_string(MovieFormat format);
/// Fails early (UsageError naming the path) where `path` cannot take the
/// movie: a PNG series needs a new or empty folder whose parent is writable;
/// a GIF or MP4 an existing folder to go into.
void check_movie_output(const std::string& path, MovieFormat format);

/// True when this build encodes GIF and MP4 (FFmpeg's libraries were found).
bool have_video_encoding();

/// Writes the frames as `format` to `path`. `info` goes into the PNG series'
/// trajectory.json. Returns the codec used ("png", "gif", "h264 (libx264)",
/// "mpeg4" where libavcodec has no H.264 encoder). Error naming the path
/// when it cannot be written; Error with one line when this build has no
/// FFmpeg and a GIF or MP4 was asked for.
std::string write_movie(const std::string& path, MovieFormat format, const GreyFrames& frames, double fps,
                        const nlohmann::json& info = nullptr);

/// What a movie file holds, read back through libavformat/libavcodec
/// (every frame decoded): frame count, size, codec; with `grey` each frame
/// as 8-bit grey (the luma plane). Error naming the path.
struct MovieInfo {
  int64_t frames = 0;
  int width = 0, height = 0;
  std::string codec;
  double seconds_per_frame = 0;  ///< from the first two frames' timestamps (0 with one frame)
};
MovieInfo read_movie(const std::string& path, std::vector<std::vector<uint8_t>>* grey = nullptr);

/// trajectory.json's content: order, contrast rule and range, scale, fps,
/// and per bin its count, mean position, mean coordinates and dataset rows.
nlohmann::json trajectory_metadata(const TrajectoryFrames& frames, const GreyFrames& grey, double fps);

}  // namespace manifold
