#include "manifold/ui/run_parameters.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "manifold/error.h"
#include "manifold/output.h"

namespace manifold::ui {

bool RunParameters::sameGraphFamily(const RunParameters& o) const {
  return knn.metric == o.knn.metric && knn.keep_self == o.knn.keep_self;
}

bool RunParameters::differsOnlyInTime(const RunParameters& o) const {
  const auto& a = diffusion;
  const auto& b = o.diffusion;
  return sameGraphFamily(o) && knn.k == o.knn.k && a.k == b.k && a.epsilon == b.epsilon && a.alpha == b.alpha &&
         a.components == b.components && a.symmetrize == b.symmetrize && a.local_scaling == b.local_scaling &&
         a.tolerance == b.tolerance && a.ncv == b.ncv;
}

nlohmann::json sessionToJson(const Session& s) {
  const auto& p = s.params;
  nlohmann::json data = {{"demo", s.demo}};
  if (!s.demo) data["path"] = s.data_path.toStdString();
  if (!s.fingerprint.empty()) data["fingerprint"] = s.fingerprint;
  return {
      {"format", "manifold-session"},
      {"version", 1},
      {"data", data},
      {"knn",
       {{"k", p.knn.k},
        {"metric", to_string(p.knn.metric)},
        {"keep_self", p.knn.keep_self},
        {"backend", p.backend},
        {"devices", p.knn.devices}}},
      {"embed",
       {{"k", p.diffusion.k > 0 ? p.diffusion.k : p.knn.k},
        {"epsilon", p.diffusion.epsilon},
        {"alpha", p.diffusion.alpha},
        {"components", p.diffusion.components},
        {"t", p.diffusion.t},
        {"symmetrize", p.diffusion.symmetrize},
        {"local_scaling", p.diffusion.local_scaling}}},
      {"view", s.view},
  };
}

Session sessionFromJson(const nlohmann::json& j) {
  try {
    if (j.value("format", "") != "manifold-session")
      throw Error("not a manifold session (\"format\" is not \"manifold-session\")");
    if (j.value("version", 0) != 1) throw Error("unsupported session version " + j.value("version", nlohmann::json(0)).dump());
    Session s;
    const auto& data = j.at("data");
    s.demo = data.value("demo", false);
    if (!s.demo) s.data_path = QString::fromStdString(data.at("path").get<std::string>());
    s.fingerprint = data.value("fingerprint", "");
    const auto& knn = j.at("knn");
    s.params.knn.k = knn.at("k").get<int>();
    s.params.knn.metric = parse_metric(knn.value("metric", "euclidean"));
    s.params.knn.keep_self = knn.value("keep_self", false);
    s.params.backend = knn.value("backend", "auto");
    s.params.knn.devices = knn.value("devices", std::vector<int>{});
    const auto& e = j.at("embed");
    s.params.diffusion.k = e.value("k", s.params.knn.k);
    const auto& eps = e.at("epsilon");
    if (eps.is_number()) {
      std::ostringstream text;
      text.precision(17);
      text << eps.get<double>();
      s.params.diffusion.epsilon = text.str();
    } else {
      s.params.diffusion.epsilon = eps.get<std::string>();
    }
    s.params.diffusion.alpha = e.value("alpha", 1.0);
    s.params.diffusion.components = e.value("components", 10);
    s.params.diffusion.t = e.value("t", 1.0);
    s.params.diffusion.symmetrize = e.value("symmetrize", "or");
    s.params.diffusion.local_scaling = e.value("local_scaling", 0);
    if (j.contains("view") && j["view"].is_object()) s.view = j["view"];
    return s;
  } catch (const nlohmann::json::exception& ex) {
    throw Error(std::string("session: ") + ex.what());
  }
}

void writeSession(const QString& path, const Session& session) {
  write_text_file(path.toStdString(), sessionToJson(session).dump(2) + "\n");
}

Session readSession(const QString& path) {
  std::ifstream in(path.toStdString());
  if (!in) throw Error(path.toStdString() + ": cannot open");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& ex) {
    throw Error(path.toStdString() + ": not valid JSON (" + ex.what() + ")");
  }
  try {
    return sessionFromJson(j);
  } catch (const Error& ex) {
    throw Error(path.toStdString() + ": " + ex.what());
  }
}

std::shared_ptr<const DiffusionResult> withDiffusionTime(const DiffusionResult& result, double t) {
  auto out = std::make_shared<DiffusionResult>(result);
  const int m = result.m, nev = m + 1;
  std::vector<double> lt(static_cast<size_t>(nev));
  for (int c = 0; c < nev; ++c) {
    const double l = result.eigenvalues[static_cast<size_t>(c)];
    // Same rule as diffusion_map(): the odd extension keeps a negative
    // eigenvalue's power real for fractional t.
    lt[static_cast<size_t>(c)] = t == std::floor(t) ? std::pow(l, t) : std::copysign(std::pow(std::abs(l), t), l);
  }
  for (int64_t i = 0; i < result.n; ++i)
    for (int c = 1; c < nev; ++c)
      out->coordinates[static_cast<size_t>(i * m + c - 1)] =
          lt[static_cast<size_t>(c)] * result.psi[static_cast<size_t>(i * nev + c)];
  return out;
}

}  // namespace manifold::ui
