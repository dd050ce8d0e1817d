// Session files (format documented in session.h).
#include "manifold/session.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "manifold/error.h"
#include "manifold/output.h"
#include "manifold/simulate.h"

namespace fs = std::filesystem;

namespace manifold {

nlohmann::json session_to_json(const Session& s) {
  nlohmann::json j;
  j["format"] = "manifold-session";
  j["version"] = 1;
  j["data"] = s.data;
  if (!s.dataset.empty()) j["dataset"] = s.dataset;
  j["transform"] = s.transform;
  if (!s.mask.empty()) j["mask"] = s.mask;
  if (!s.metadata.empty()) j["metadata"] = s.metadata;
  j["knn"] = {{"k", s.knn.k},
              {"metric", to_string(s.knn.metric)},
              {"backend", s.backend},
              {"select", to_string(s.knn.select)},
              {"keep_self", s.knn.keep_self},
              {"devices", s.knn.devices},
              {"gpu_memory", s.knn.gpu_memory},
              {"threads", s.knn.threads},
              {"precision", to_string(s.knn.precision)}};
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

namespace {

/// Nesting depth of a JSON value (a scalar is 0).
int depth_of(const nlohmann::json& v, int limit) {
  if (!v.is_structured() || limit < 0) return 0;
  int d = 0;
  for (const auto& child : v) {
    d = std::max(d, depth_of(child, limit - 1));
    if (d >= limit) break;
  }
  return d + 1;
}

/// An integer field within the command line's limits: a float such as
/// 1e20, or a value out of [lo, hi], is refused (converting it was
/// undefined behaviour).
int64_t integer_in(const nlohmann::json& obj, const std::string& key, int64_t fallback, int64_t lo, int64_t hi,
                   const std::string& name) {
  if (!obj.contains(key)) return fallback;
  const auto& v = obj[key];
  const bool in_range = v.is_number_integer() &&
                        (v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                                : v.get<int64_t>() <= hi) &&
                        v.get<int64_t>() >= lo;
  if (!in_range)
    throw UsageError("\"" + name + "\" must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v.get<int64_t>();
}

/// A real field: a finite number.
double real_in(const nlohmann::json& obj, const std::string& key, double fallback, const std::string& name) {
  if (!obj.contains(key)) return fallback;
  if (!obj[key].is_number() || !std::isfinite(obj[key].get<double>()))
    throw UsageError("\"" + name + "\" must be a finite number");
  return obj[key].get<double>();
}

/// Deeper views than this are not the GUI's (it writes 2 levels).
constexpr int kMaxViewDepth = 16;
constexpr int64_t kMaxThreads = 4096;  // as the command line's --threads

}  // namespace

namespace {

// A session may name its output folder only below its own folder: a session
// file handed around must not send a run's output to some other folder
// (where -o would have to be given to write).
std::string output_below(const std::string& output, const std::string& base_dir,
                         const std::function<void(const std::string&)>& fail) {
  if (output.empty()) return output;
  const fs::path p = fs::path(output).lexically_normal();
  if (p.is_absolute() || p.empty() || *p.begin() == ".." || p == ".")
    fail("\"output\": '" + output + "' is not a folder below the session's own folder; give -o to write elsewhere");
  return base_dir.empty() ? p.string() : (fs::path(base_dir) / p).lexically_normal().string();
}

using FailFn = std::function<void(const std::string&)>;

/// A path of the session relative to its own folder, made usable from here.
std::string resolved(const std::string& p, const std::string& base_dir) {
  if (p.empty() || base_dir.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(base_dir) / p).lexically_normal().string();
}

/// What the run reads and where it writes: data, dataset, transform, mask,
/// metadata, output and the GUI's view.
void read_inputs(const nlohmann::json& j, const std::string& base_dir, const FailFn& fail, Session& s) {
  if (!j.contains("data")) fail("missing \"data\" (the dataset path)");
  if (!j["data"].is_string() || j["data"].get<std::string>().empty())
    fail("\"data\" must be the dataset path (a non-empty string)");
  s.data = resolved(j["data"].get<std::string>(), base_dir);
  s.dataset = j.value("dataset", std::string());
  s.transform = j.value("transform", std::string("none"));
  try {
    validate_transform(s.transform);  // the run's own rule: none, anscombe, binB, steps joined by +
  } catch (const Error& e) {
    fail(std::string("\"transform\": ") + e.what());
  }
  if (j.contains("mask")) {
    if (!j["mask"].is_string() || j["mask"].get<std::string>().empty())
      fail("\"mask\" must name a mask file, or be \"none\"");
    const std::string mask = j["mask"].get<std::string>();
    s.mask = mask == "none" ? mask : resolved(mask, base_dir);
  }
  if (j.contains("metadata")) {
    // FILE or FILE:COLUMN, the file relative like "data": the base goes
    // in front of the text (a column holds '/' that a path must not see).
    const auto& m = j["metadata"];
    if (!m.is_array()) fail("\"metadata\" must be a list of FILE or FILE:COLUMN");
    for (const auto& spec : m) {
      if (!spec.is_string() || spec.get<std::string>().empty())
        fail("\"metadata\" must be a list of FILE or FILE:COLUMN");
      const std::string text = spec.get<std::string>();
      const bool relative = !base_dir.empty() && !fs::path(text).is_absolute();
      s.metadata.push_back(relative ? (fs::path(base_dir) / "").string() + text : text);
    }
  }
  s.output = output_below(j.value("output", std::string()), base_dir, fail);
  if (j.contains("view")) {
    if (depth_of(j["view"], kMaxViewDepth + 1) > kMaxViewDepth)
      fail("\"view\" is nested more than " + std::to_string(kMaxViewDepth) + " levels deep");
    s.view = j["view"];
  }
}

/// Every key of `section` must be one of `keys` (a misspelt one would be
/// ignored without a word otherwise).
void only_known_keys(const nlohmann::json& section, const char* name, const std::set<std::string>& keys,
                     const FailFn& fail) {
  if (!section.is_object()) fail(std::string("\"") + name + "\" must be an object");
  for (auto& [key, v] : section.items())
    if (!keys.count(key)) fail(std::string("unknown key '") + name + "." + key + "'");
}

void read_knn(const nlohmann::json& k, const FailFn& fail, Session& s) {
  only_known_keys(k, "knn",
                  {"k", "metric", "backend", "select", "keep_self", "devices", "gpu_memory", "threads", "precision"},
                  fail);
  s.knn.k = static_cast<int>(integer_in(k, "k", s.knn.k, 1, INT32_MAX, "knn.k"));
  s.knn.metric = parse_metric(k.value("metric", std::string("euclidean")));
  s.backend = k.value("backend", s.backend);
  s.knn.select = parse_select(k.value("select", to_string(s.knn.select)));
  s.knn.keep_self = k.value("keep_self", s.knn.keep_self);
  s.knn.devices = k.value("devices", s.knn.devices);
  s.knn.gpu_memory = static_cast<uint64_t>(integer_in(k, "gpu_memory", static_cast<int64_t>(s.knn.gpu_memory), 0,
                                                      INT64_MAX, "knn.gpu_memory"));
  s.knn.threads = static_cast<int>(integer_in(k, "threads", s.knn.threads, 0, kMaxThreads, "knn.threads"));
  s.knn.precision = parse_precision(k.value("precision", to_string(s.knn.precision)));
}

void read_diffusion(const nlohmann::json& d, const FailFn& fail, Session& s) {
  only_known_keys(d, "diffusion",
                  {"k", "epsilon", "alpha", "components", "t", "symmetrize", "local_scaling", "tolerance", "ncv",
                   "threads", "lock_check", "eigensolver", "max_matvecs", "time_limit_s"},
                  fail);
  auto& p = s.diffusion;
  p.k = static_cast<int>(integer_in(d, "k", p.k, 0, 1 << 20, "diffusion.k"));
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
  p.alpha = real_in(d, "alpha", p.alpha, "diffusion.alpha");
  p.components = static_cast<int>(integer_in(d, "components", p.components, 1, 1 << 20, "diffusion.components"));
  p.t = real_in(d, "t", p.t, "diffusion.t");
  p.symmetrize = d.value("symmetrize", p.symmetrize);
  if (d.contains("local_scaling"))
    p.local_scaling = d["local_scaling"].is_string()
                          ? parse_local_scaling(d["local_scaling"].get<std::string>())
                          : static_cast<int>(integer_in(d, "local_scaling", 0, 0, 1 << 20, "diffusion.local_scaling"));
  p.max_matvecs = integer_in(d, "max_matvecs", p.max_matvecs, 0, INT64_MAX, "diffusion.max_matvecs");
  p.time_limit_s = real_in(d, "time_limit_s", p.time_limit_s, "diffusion.time_limit_s");
  p.tolerance = real_in(d, "tolerance", p.tolerance, "diffusion.tolerance");
  p.ncv = static_cast<int>(integer_in(d, "ncv", p.ncv, 0, 1 << 20, "diffusion.ncv"));
  p.lock_check = d.value("lock_check", p.lock_check);
  p.eigensolver = d.value("eigensolver", p.eigensolver);
  p.threads = static_cast<int>(integer_in(d, "threads", p.threads, 0, kMaxThreads, "diffusion.threads"));
}

}  // namespace

Session session_from_json(const nlohmann::json& j, const std::string& base_dir, const std::string& src) {
  const FailFn fail = [&](const std::string& what) { throw Error(src + ": " + what); };
  if (!j.is_object()) fail("not a session (expected a JSON object)");
  // Checked by type first: j.value() throws on a "format" that is not a string.
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != "manifold-session")
    fail("not a manifold session (\"format\" must be \"manifold-session\")");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != 1)
    fail("unsupported session version (expected 1)");
  Session s;
  try {
    read_inputs(j, base_dir, fail, s);
    if (j.contains("knn")) read_knn(j["knn"], fail, s);
    if (j.contains("diffusion")) read_diffusion(j["diffusion"], fail, s);
  } catch (const nlohmann::json::exception& e) {
    throw Error(src + ": a value has the wrong type (" + std::string(e.what()) + ")");
  } catch (const UsageError& e) {
    throw Error(src + ": " + e.what());
  }
  return s;
}

Session read_session(const std::string& path) {
  std::error_code ec;
  // A folder opens as a stream on Linux and fails only when read (with the
  // C++ library's words): said here.
  if (fs::is_directory(path, ec)) throw Error(path + ": is a folder, not a session file");
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

void write_session(const std::string& path, const Session& s) {
  write_text_file(path, session_to_json(s).dump(2) + "\n");
}

}  // namespace manifold
