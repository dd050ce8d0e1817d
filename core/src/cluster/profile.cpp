// Cluster profiles: a small JSON file per cluster, checked key by key so a
// typo is reported as such rather than silently ignored.
#include <filesystem>
#include <fstream>
#include <set>

#include "manifold/cluster.h"
#include "manifold/error.h"

namespace fs = std::filesystem;

namespace manifold::cluster {

std::string to_string(Profile::Kind kind) { return kind == Profile::Kind::Slurm ? "slurm" : "mpirun"; }

namespace {

std::string join(const std::set<std::string>& keys) {
  std::string s;
  for (auto& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

class Reader {
 public:
  Reader(const nlohmann::json& j, std::string origin) : j_(j), origin_(std::move(origin)) {}
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw UsageError(origin_ + ": cluster profile key '" + key + "' " + what);
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  std::string str(const std::string& key, const std::string& fallback = {}) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) fail(key, "must be a string");
    return j_[key].get<std::string>();
  }
  int positive(const std::string& key, int fallback, int min = 1) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_number_integer() || j_[key].get<int64_t>() < min || j_[key].get<int64_t>() > 1000000)
      fail(key, min == 0 ? "must be a non-negative integer" : "must be a positive integer");
    return j_[key].get<int>();
  }
  std::vector<std::string> strings(const std::string& key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    if (!j_[key].is_array()) fail(key, "must be a list of strings");
    for (auto& v : j_[key]) {
      if (!v.is_string()) fail(key, "must be a list of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  std::map<std::string, std::string> string_map(const std::string& key) const {
    std::map<std::string, std::string> out;
    if (!has(key)) return out;
    if (!j_[key].is_object()) fail(key, "must be an object of NAME: \"value\" pairs");
    for (auto& [k, v] : j_[key].items()) {
      if (!v.is_string()) fail(key, "value of '" + k + "' must be a string");
      bool ok = !k.empty() && !std::isdigit(static_cast<unsigned char>(k[0]));
      for (char c : k) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!ok) fail(key, "has '" + k + "', which is not an environment variable name");
      out[k] = v.get<std::string>();
    }
    return out;
  }

 private:
  const nlohmann::json& j_;
  std::string origin_;
};

// Slurm accepts minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
bool valid_time_limit(const std::string& t) {
  if (t.empty() || t == "UNLIMITED" || t == "INFINITE") return !t.empty();
  int colons = 0, dashes = 0;
  for (char c : t) {
    if (c == ':') ++colons;
    else if (c == '-')
      ++dashes;
    else if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  }
  return dashes <= 1 && colons <= 2 && t.front() != ':' && t.back() != ':' && t.back() != '-';
}

}  // namespace

Profile parse_profile(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw UsageError(origin + ": a cluster profile must be a JSON object");
  Reader r(j, origin);
  Profile p;
  if (!r.has("kind")) throw UsageError(origin + ": cluster profile has no \"kind\" (mpirun or slurm)");
  const std::string kind = r.str("kind");
  if (kind == "mpirun") p.kind = Profile::Kind::Mpirun;
  else if (kind == "slurm")
    p.kind = Profile::Kind::Slurm;
  else
    r.fail("kind", "is '" + kind + "'; expected mpirun or slurm");

  const std::set<std::string> common = {"kind", "name", "work_dir", "manifold", "mpirun", "mpirun_args", "env"};
  const std::set<std::string> mpirun_keys = {"ranks", "hostfile"};
  const std::set<std::string> slurm_keys = {"partition",     "nodes",      "ranks_per_node",
                                            "gpus_per_node", "time_limit", "sbatch_args"};
  const auto& own = p.kind == Profile::Kind::Slurm ? slurm_keys : mpirun_keys;
  for (auto& [key, value] : j.items()) {
    if (common.count(key) || own.count(key)) continue;
    const auto& other = p.kind == Profile::Kind::Slurm ? mpirun_keys : slurm_keys;
    if (other.count(key)) r.fail(key, "does not apply to kind " + kind);
    std::set<std::string> allowed = common;
    allowed.insert(own.begin(), own.end());
    r.fail(key, "is unknown (allowed for kind " + kind + ": " + join(allowed) + ")");
  }

  p.name = r.str("name", fs::path(origin).stem().string());
  p.work_dir = r.str("work_dir");
  // Values that reach a comment or an #SBATCH line of the job script: a
  // newline there would end the line and run the rest as shell on the node.
  auto single_line = [&](const std::string& key, const std::string& v) {
    for (unsigned char c : v)
      if (c < 0x20 || c == 0x7f)
        r.fail(key, "holds a control character (a newline would inject shell lines into the job script)");
  };
  single_line(j.contains("name") ? "name" : "name (the profile's file name)", p.name);
  single_line("work_dir", p.work_dir);
  p.manifold = r.str("manifold");
  p.mpirun = r.str("mpirun", "mpirun");
  if (p.mpirun.empty()) r.fail("mpirun", "must not be empty");
  p.mpirun_args = r.strings("mpirun_args");
  p.env = r.string_map("env");
  // The command line's words reach the job script too.
  single_line("manifold", p.manifold);
  single_line("mpirun", p.mpirun);
  for (const std::string& a : p.mpirun_args) single_line("mpirun_args", a);
  for (const auto& [name, value] : p.env) {
    single_line("env", name);
    single_line("env", value);
  }
  if (p.kind == Profile::Kind::Mpirun) {
    p.ranks = r.positive("ranks", 1);
    p.hostfile = r.str("hostfile");
    single_line("hostfile", p.hostfile);
  } else {
    p.partition = r.str("partition");
    p.nodes = r.positive("nodes", 1);
    p.ranks_per_node = r.positive("ranks_per_node", 1);
    p.gpus_per_node = r.positive("gpus_per_node", 0, 0);
    p.time_limit = r.str("time_limit", "01:00:00");
    if (!valid_time_limit(p.time_limit))
      r.fail("time_limit", "is '" + p.time_limit + "'; expected Slurm's form, e.g. 30, 02:00:00 or 1-12:00:00");
    p.sbatch_args = r.strings("sbatch_args");
    single_line("partition", p.partition);
    for (const std::string& a : p.sbatch_args) single_line("sbatch_args", a);
    // #SBATCH --output takes the path in double quotes (a space would end it).
    if (p.work_dir.find('"') != std::string::npos)
      r.fail("work_dir", "holds a double quote, which #SBATCH paths cannot");
    if (p.work_dir.empty())
      throw UsageError(origin + ": a slurm profile needs \"work_dir\", a folder every node can see");
  }
  return p;
}

Profile load_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the cluster profile");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw UsageError(path + ": the cluster profile is not valid JSON");
  Profile p = parse_profile(j, path);
  // Relative paths in a profile are relative to the profile's folder.
  const fs::path base = fs::absolute(fs::path(path)).parent_path();
  auto anchor = [&](std::string& s) {
    if (!s.empty() && fs::path(s).is_relative()) s = (base / s).lexically_normal().string();
  };
  anchor(p.work_dir);
  anchor(p.hostfile);
  if (p.manifold.find('/') != std::string::npos) anchor(p.manifold);
  return p;
}

nlohmann::json profile_to_json(const Profile& p) {
  nlohmann::json j;
  j["kind"] = to_string(p.kind);
  j["name"] = p.name;
  if (!p.work_dir.empty()) j["work_dir"] = p.work_dir;
  if (!p.manifold.empty()) j["manifold"] = p.manifold;
  j["mpirun"] = p.mpirun;
  j["mpirun_args"] = p.mpirun_args;
  j["env"] = p.env;
  if (p.kind == Profile::Kind::Mpirun) {
    j["ranks"] = p.ranks;
    if (!p.hostfile.empty()) j["hostfile"] = p.hostfile;
  } else {
    if (!p.partition.empty()) j["partition"] = p.partition;
    j["nodes"] = p.nodes;
    j["ranks_per_node"] = p.ranks_per_node;
    j["gpus_per_node"] = p.gpus_per_node;
    j["time_limit"] = p.time_limit;
    j["sbatch_args"] = p.sbatch_args;
  }
  return j;
}

}  // namespace manifold::cluster
