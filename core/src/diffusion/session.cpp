// Session files (format documented in session.h).
#include "manifold/session.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "manifold/error.h"
#include "manifold/output.h"

namespace fs = std::filesystem;

namespace manifold {

nlohmann::json session_to_json(const Session& s) {
  nlohmann::json j;
  j["format"] = "manifold-session";
  j["version"] = 1;
  j["data"] = s.data;
  if (!s.dataset.empty()) j["dataset"] = s.dataset;
  j["transform"] = s.transform;
  j["knn"] = {{"k", s.knn.k},
              {"metric", to_string(s.knn.metric)},
              {"backend", s.backend},
              {"select", s.knn.select},
              {"keep_self", s.knn.keep_self},
              {"devices", s.knn.devices},
              {"gpu_memory", s.knn.gpu_memory},
              {"threads", s.knn.threads},
              {"precision", s.knn.precision}};
  const auto& d = s.diffusion;
  j["diffusion"] = {{"k", d.k},
                    {"epsilon", d.epsilon},
                    {"alpha", d.alpha},
                    {"components", d.components},
                    {"t", d.t},
                    {"symmetrize", d.symmetrize},
                    {"local_scaling", local_scaling_json(d.local_scaling)},
                    {"tolerance", d.tolerance},
                    {"max_matvecs", d.max_matvecs},
                    {"time_limit_s", d.time_limit_s},
                    {"ncv", d.ncv},
                    {"lock_check", d.lock_check},
                    {"eigensolver", d.eigensolver},
                    {"threads", d.threads}};
  if (!s.output.empty()) j["output"] = s.output;
  if (!s.view.is_null()) j["view"] = s.view;
  return j;
}

Session session_from_json(const nlohmann::json& j, const std::string& base_dir, const std::string& src) {
  auto fail = [&](const std::string& what) -> void { throw Error(src + ": " + what); };
  if (!j.is_object()) fail("not a session (expected a JSON object)");
  if (j.value("format", std::string()) != "manifold-session") fail("not a manifold session (\"format\" must be \"manifold-session\")");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != 1)
    fail("unsupported session version (expected 1)");
  auto resolve = [&](const std::string& p) {
    if (p.empty() || base_dir.empty() || fs::path(p).is_absolute()) return p;
    return (fs::path(base_dir) / p).lexically_normal().string();
  };
  Session s;
  try {
    if (!j.contains("data") || !j["data"].is_string() || j["data"].get<std::string>().empty())
      fail("missing \"data\" (the dataset path)");
    s.data = resolve(j["data"].get<std::string>());
    s.dataset = j.value("dataset", std::string());
    s.transform = j.value("transform", std::string("none"));
    if (s.transform != "none" && s.transform != "anscombe")
      fail("unknown transform '" + s.transform + "' (none, anscombe)");
    s.output = resolve(j.value("output", std::string()));
    if (j.contains("view")) s.view = j["view"];
    if (j.contains("knn")) {
      const auto& k = j["knn"];
      if (!k.is_object()) fail("\"knn\" must be an object");
      static const std::set<std::string> keys = {"k",       "metric",     "backend", "select",   "keep_self",
                                                 "devices", "gpu_memory", "threads", "precision"};
      for (auto& [key, v] : k.items())
        if (!keys.count(key)) fail("unknown key 'knn." + key + "'");
      s.knn.k = k.value("k", s.knn.k);
      s.knn.metric = parse_metric(k.value("metric", std::string("euclidean")));
      s.backend = k.value("backend", s.backend);
      s.knn.select = k.value("select", s.knn.select);
      s.knn.keep_self = k.value("keep_self", s.knn.keep_self);
      s.knn.devices = k.value("devices", s.knn.devices);
      s.knn.gpu_memory = k.value("gpu_memory", s.knn.gpu_memory);
      s.knn.threads = k.value("threads", s.knn.threads);
      s.knn.precision = k.value("precision", s.knn.precision);
    }
    if (j.contains("diffusion")) {
      const auto& d = j["diffusion"];
      if (!d.is_object()) fail("\"diffusion\" must be an object");
      static const std::set<std::string> keys = {"k",          "epsilon",       "alpha",     "components", "t",
                                                 "symmetrize", "local_scaling", "tolerance", "ncv",        "threads",
                                                 "lock_check", "eigensolver", "max_matvecs", "time_limit_s"};
      for (auto& [key, v] : d.items())
        if (!keys.count(key)) fail("unknown key 'diffusion." + key + "'");
      auto& p = s.diffusion;
      p.k = d.value("k", p.k);
      if (d.contains("epsilon")) {
        if (d["epsilon"].is_number()) {
          std::ostringstream os;
          os.precision(17);
          os << d["epsilon"].get<double>();
          p.epsilon = os.str();
        } else {
          p.epsilon = d["epsilon"].get<std::string>();
        }
      }
      p.alpha = d.value("alpha", p.alpha);
      p.components = d.value("components", p.components);
      p.t = d.value("t", p.t);
      p.symmetrize = d.value("symmetrize", p.symmetrize);
      if (d.contains("local_scaling"))
        p.local_scaling = d["local_scaling"].is_string() ? parse_local_scaling(d["local_scaling"].get<std::string>())
                                                         : d["local_scaling"].get<int>();
      p.max_matvecs = d.value("max_matvecs", p.max_matvecs);
      p.time_limit_s = d.value("time_limit_s", p.time_limit_s);
      p.tolerance = d.value("tolerance", p.tolerance);
      p.ncv = d.value("ncv", p.ncv);
      p.lock_check = d.value("lock_check", p.lock_check);
      p.eigensolver = d.value("eigensolver", p.eigensolver);
      p.threads = d.value("threads", p.threads);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(src + ": a value has the wrong type (" + std::string(e.what()) + ")");
  } catch (const UsageError& e) {
    throw Error(src + ": " + e.what());
  }
  return s;
}

Session read_session(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open session file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    throw Error(path + ": not valid JSON");
  }
  const fs::path parent = fs::path(path).parent_path();
  return session_from_json(j, parent.empty() ? "." : parent.string(), path);
}

void write_session(const std::string& path, const Session& s) { write_text_file(path, session_to_json(s).dump(2) + "\n"); }

}  // namespace manifold
