// manifold trajectory: the images of an embedding played in order along a
// diffusion coordinate, around the phase of two, or along a drawn path; each
// frame the mean image of one bin of equal count, written as an animated
// GIF, an MP4 or a folder of PNG frames.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "manifold/dataset.h"
#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/movie.h"
#include "manifold/npy.h"
#include "manifold/results_folder.h"
#include "manifold/session.h"
#include "manifold/terminal_progress.h"
#include "manifold/trajectory.h"

namespace fs = std::filesystem;

namespace manifold::cli {

namespace {

struct DataSource {
  std::string path;
  std::string hdf5_dataset;
  std::string recorded_in;  ///< the file that named it ("" = --data)
};

/// The data the embedding was made from: --data, else the "data" of the
/// folder's session.json, else of its embedding.json (both relative to the
/// folder), where recorded or, moved with the results, by name beside the
/// folder (core's find_recorded_file). Frames are means of the data as
/// stored, before any transform.
DataSource find_data(const Args& a, const std::string& dir) {
  DataSource s;
  s.hdf5_dataset = a.str("--dataset");
  if (a.has("--data")) {
    s.path = a.str("--data");
    if (!fs::exists(s.path)) throw UsageError("--data " + s.path + ": no such file or folder");
    return s;
  }
  const fs::path session = fs::path(dir) / "session.json", embedding = fs::path(dir) / "embedding.json";
  if (fs::exists(session)) {
    const Session recorded = read_session(session.string());
    s.path = recorded.data;
    if (!a.has("--dataset")) s.hdf5_dataset = recorded.dataset;
    s.recorded_in = session.string();
  } else if (fs::exists(embedding)) {
    std::ifstream in(embedding);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("data") && j["data"].is_string()) {
      s.path = j["data"].get<std::string>();
      if (fs::path(s.path).is_relative()) s.path = (fs::path(dir) / s.path).lexically_normal().string();
      s.recorded_in = embedding.string();
    }
  }
  if (s.path.empty())
    throw UsageError(dir +
                     ": neither session.json nor embedding.json names the data it was made from; give --data FILE");
  const std::string found = find_recorded_file(s.path, dir);
  if (found.empty()) throw UsageError(s.recorded_in + ": its data " + s.path + " does not exist; give --data FILE");
  if (found != s.path && !a.has("--quiet")) note_read_beside(found);
  s.path = found;
  return s;
}

/// Where the graph was built from the rows as stored (no transform, no
/// mask), their fingerprint is the graph's: rows that changed since, or came
/// in another order, would be averaged into the wrong frames.
void check_rows_unchanged(const Embedding& e, const Dataset& data, const DataSource& source) {
  const nlohmann::json& m = e.metadata;
  if (!m.contains("graph") || !m["graph"].is_object() || m.value("transform", std::string("none")) != "none") return;
  const nlohmann::json& g = m["graph"];
  const bool masked = g.contains("extra") && g["extra"].is_object() && g["extra"].contains("mask");
  if (masked || !g.contains("fingerprint") || !g["fingerprint"].is_string()) return;
  if (g["fingerprint"].get<std::string>() != data.fingerprint())
    throw UsageError((source.recorded_in.empty() ? "--data " : source.recorded_in + ": its data ") + source.path +
                     " holds other rows than the embedding was made from (their fingerprint differs: the data "
                     "changed, or came in another order); give --data the data it was made from");
}

std::vector<int> integer_list(const std::string& option, const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    try {
      size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw UsageError(option + ": '" + text + "' is not a list of integers such as 1,2");
    }
    start = comma + 1;
  }
  return out;
}

/// --tube as PathOptions takes it: 0 is every point (as the help says; core's
/// 0 is the explorer's automatic tube, asked for here by "auto").
double tube_from(const Args& a) {
  if (a.str("--tube", "0") == "auto") return 0;
  const double tube = a.real("--tube", 0);
  return tube == 0 ? std::numeric_limits<double>::infinity() : tube;
}

/// The order the options ask for (default: along dc1).
TrajectoryOrder order_from(const Args& a, const EmbeddedPoints& points) {
  const int chosen = a.has("--coordinate") + a.has("--phase") + a.has("--path");
  if (chosen > 1) throw UsageError("trajectory: give one of --coordinate, --phase and --path");
  for (auto o : {"--axes", "--tube"})
    if (a.has(o) && !a.has("--path")) throw UsageError(std::string(o) + " belongs to --path");
  if (a.has("--phase")) {
    const std::vector<int> ab = integer_list("--phase", a.str("--phase"));
    if (ab.size() != 2) throw UsageError("--phase: give two coordinates, such as 1,2");
    return order_by_phase(points, ab[0], ab[1]);
  }
  if (a.has("--path")) {
    const std::string file = a.str("--path");
    if (!fs::exists(file)) throw UsageError("--path " + file + ": no such file");
    std::vector<int64_t> shape;
    const std::vector<double> path = npy::read<double>(file, &shape);
    if (shape.size() != 2) throw UsageError("--path " + file + ": must be a P x q array (a polyline of P vertices)");
    PathOptions options;
    if (a.has("--axes")) options.axes = integer_list("--axes", a.str("--axes"));
    options.tube = tube_from(a);
    return order_along_path(points, path, static_cast<int>(shape[1]), options);
  }
  return order_by_coordinate(points, static_cast<int>(a.integer("--coordinate", 1, INT32_MIN, INT32_MAX)));
}

}  // namespace

int cmd_trajectory(int argc, char** argv) {
  Args a("trajectory", "The images of an embedding in order, each frame the mean of one bin, as a movie.",
         {value("--coordinate", "C", "order along dc C", "1"),
          value("--phase", "A,B", "order around the phase atan2(dc B, dc A)"),
          value("--path", "FILE.npy", "order along a P x q polyline in embedding space"),
          value("--axes", "LIST", "--path: the coordinates its columns are (default: 1..q)"),
          value("--tube", "R|auto",
                "--path: only the points within R of it (0: all; auto: 0.1 of the points' largest extent, "
                "as the explorer)",
                "0"),
          value("--bins", "B", "frames, each the mean of an equal share of the points", "50"),
          value("--fps", "F", "frames per second", "10"),
          value("--scale", "S", "enlarge by whole pixels (0: to 256 or more)", "0"),
          flag("--log", "contrast on log(1 + v - min)"),
          value("--data", "FILE", "the images (default: the data the folder's session.json or embedding.json names)"),
          value("--dataset", "PATH", "the dataset inside an HDF5/CXI file, or the array of an .npz"),
          value("--threads", "T", "CPU threads (0: every core)", "0"), flag("--quiet,-q", "no progress and no summary"),
          value("-o", "movie.gif|movie.mp4|FOLDER", "the movie, or a new folder of PNG frames")},
         argc, argv, 2, {{"EMBEDDINGDIR", "the embedding folder"}});
  const std::string dir = a.one_positional("EMBEDDINGDIR");
  if (!a.has("-o")) throw UsageError("trajectory: missing -o movie.gif|movie.mp4|FOLDER");
  const std::string out = a.str("-o");
  const MovieFormat format = movie_format_for(out);
  check_movie_output(out, format);
  if (format != MovieFormat::PngSeries && !have_video_encoding())
    throw UsageError("-o " + out + ": this build has no FFmpeg libraries for " + to_string(format) +
                     "; write PNG frames to a folder instead");
  MovieOptions movie;
  movie.fps = a.real("--fps", 10);
  movie.scale = static_cast<int>(a.integer("--scale", 0, 0, 64));
  movie.log_scale = a.has("--log");
  if (!(movie.fps > 0) || !(movie.fps <= 1000)) throw UsageError("--fps: must be a number in (0, 1000]");
  if (!fs::is_directory(dir)) throw UsageError(dir + ": no such embedding folder");

  // Order and bins first: a bad option fails before the data is read.
  const Embedding e = read_embedding(dir);
  EmbeddedPoints points;
  points.n = e.n;
  points.m = e.m;
  points.coordinates = e.coordinates.data();
  points.point_index = e.point_index.data();
  const TrajectoryOrder order = order_from(a, points);
  const int64_t default_bins = std::min<int64_t>(50, static_cast<int64_t>(order.points.size()));
  const int bins = static_cast<int>(a.integer("--bins", default_bins, INT32_MIN, INT32_MAX));
  std::vector<TrajectoryBin> binned = split_into_bins(points, order, bins);

  const DataSource source = find_data(a, dir);
  const bool quiet = a.has("--quiet");
  TerminalProgress sink(stderr, quiet);
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  ReadOptions ro;
  ro.hdf5_dataset = source.hdf5_dataset;
  progress.stage("load", 1, "files");
  const Dataset data = load_dataset(source.path, ro);
  progress.finish();
  const int64_t graph_points = e.metadata.value("graph_points", int64_t{-1});
  if (graph_points >= 0 && graph_points != data.rows())
    throw UsageError((source.recorded_in.empty() ? "--data " : source.recorded_in + ": its data ") + source.path +
                     " has " + std::to_string(data.rows()) + " rows, the embedding was made from " +
                     std::to_string(graph_points));
  check_rows_unchanged(e, data, source);

  const TrajectoryFrames frames = compute_frames(data, std::move(binned), order.description, progress,
                                                 static_cast<int>(a.integer("--threads", 0, 0, 4096)));
  const GreyFrames grey = render_frames(frames, movie);
  progress.check_cancel();
  const std::string codec = write_movie(out, format, grey, movie.fps, trajectory_metadata(frames, grey, movie.fps));
  if (!quiet) {
    // A tube that leaves points out says so: the movie is then not the whole data.
    if (order.points.size() < static_cast<size_t>(e.n))
      std::printf("trajectory: %zu of %lld points lie within the --tube of the path; the others are left out\n",
                  order.points.size(), static_cast<long long>(e.n));
    size_t fewest = SIZE_MAX, most = 0;
    for (const TrajectoryBin& b : frames.bins) {
      fewest = std::min(fewest, b.rows.size());
      most = std::max(most, b.rows.size());
    }
    std::printf(
        "trajectory: %zu frames of %d x %d (%s, %zu to %zu images each, contrast %.6g..%.6g) -> %s (%s, %g fps)\n",
        grey.count, grey.width, grey.height, order.description.c_str(), fewest, most, grey.low, grey.high, out.c_str(),
        codec.c_str(), movie.fps);
  }
  return 0;
}

}  // namespace manifold::cli
