// Results folders (results_folder.h).
#include "manifold/results_folder.h"

#include <filesystem>

#include "manifold/error.h"
#include "manifold/graph_io.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

/// The session a graph folder `manifold knn` wrote stands for.
Session session_of_graph(const std::string& dir) {
  const KnnGraph g = read_graph_metadata(dir);
  if (g.k < 1) throw Error((fs::path(dir) / "graph.json").string() + ": \"k\" is missing or not positive");
  Session s;
  const auto text = [&g](const char* key) {
    const auto v = g.extra.find(key);
    return v != g.extra.end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  s.data = text("data");
  s.dataset = text("dataset");
  // The mask the graph was built with: its file, or the one inside the
  // data (found again with them: ""); none recorded, none applied.
  const auto mask = g.extra.find("mask");
  s.mask = "none";
  if (mask != g.extra.end()) {
    const auto file = mask->is_object() ? mask->find("file") : mask->end();
    s.mask = file != mask->end() && file->is_string() ? file->get<std::string>() : std::string();
  }
  s.knn.k = g.k;
  s.knn.metric = g.metric;
  s.knn.keep_self = g.keep_self;
  s.diffusion.k = g.k;
  return s;
}

}  // namespace

std::string find_recorded_file(const std::string& recorded, const std::string& folder) {
  if (recorded.empty() || path_exists(recorded)) return recorded;
  fs::path path(recorded);
  if (path.filename().empty()) path = path.parent_path();  // a folder written with its slash
  const fs::path name = path.filename();
  if (name.empty()) return {};
  for (const fs::path& candidate : {fs::path(folder) / name, fs::path(folder) / ".." / name})
    if (path_exists(candidate)) return candidate.lexically_normal().string();
  return {};
}

bool is_results_folder(const std::string& path) {
  std::error_code ec;
  const fs::path dir(path);
  return fs::is_directory(dir, ec) &&
         (path_exists(dir / "session.json") || (path_exists(dir / "graph.json") && path_exists(dir / "indices.npy")));
}

ResultsFolder read_results_folder(const std::string& dir) {
  ResultsFolder r;
  const fs::path session = fs::path(dir) / "session.json";
  r.session = path_exists(session) ? read_session(session.string()) : session_of_graph(dir);
  const bool mask_file = !r.session.mask.empty() && r.session.mask != "none";
  for (std::string* file : {&r.session.data, &r.session.mask}) {
    if (file->empty() || (file == &r.session.mask && !mask_file)) continue;
    const std::string found = find_recorded_file(*file, dir);
    if (found.empty()) {
      r.missing.push_back(*file);
    } else if (found != *file) {
      r.moved.push_back(found);
      *file = found;
    }
  }
  return r;
}

}  // namespace manifold
