#include "manifold/ui/run_parameters.h"

#include <QObject>

#include <algorithm>
#include <cmath>

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

namespace {

QString number(double v) { return QString::number(v, 'g', 6); }

QString scaling_text(int j) {
  return j == kLocalScalingAuto ? QObject::tr("auto") : j == 0 ? QObject::tr("off") : QStringLiteral("j = %1").arg(j);
}

QString epsilon_text(const std::string& e) {
  bool ok = false;
  const double v = QString::fromStdString(e).toDouble(&ok);
  return ok ? number(v) : QString::fromStdString(e);
}

QString backend_text(const RunParameters& p) {
  return p.backend == "cluster" ? QObject::tr("cluster (%1)").arg(QString::fromStdString(p.cluster_profile))
                                : QString::fromStdString(p.backend);
}

}  // namespace

ParameterChanges describeChanges(const RunParameters& a, const RunParameters& b) {
  ParameterChanges out;
  auto add = [&out](const QString& name, const QString& was, const QString& is) {
    if (was != is) out.emplace_back(name + QStringLiteral(" = ") + was, name + QStringLiteral(" = ") + is);
  };
  const auto k = [](const RunParameters& p) { return p.diffusion.k > 0 ? std::min(p.diffusion.k, p.knn.k) : p.knn.k; };
  add(QStringLiteral("k"), QString::number(k(a)), QString::number(k(b)));
  add(QObject::tr("metric"), QString::fromStdString(to_string(a.knn.metric)),
      QString::fromStdString(to_string(b.knn.metric)));
  add(QObject::tr("backend"), backend_text(a), backend_text(b));
  add(QStringLiteral("\u03b5"), epsilon_text(a.diffusion.epsilon), epsilon_text(b.diffusion.epsilon));
  add(QStringLiteral("\u03b1"), number(a.diffusion.alpha), number(b.diffusion.alpha));
  add(QStringLiteral("t"), number(a.diffusion.t), number(b.diffusion.t));
  add(QObject::tr("components"), QString::number(a.diffusion.components), QString::number(b.diffusion.components));
  add(QObject::tr("symmetrise"), QString::fromStdString(a.diffusion.symmetrize),
      QString::fromStdString(b.diffusion.symmetrize));
  add(QObject::tr("local scaling"), scaling_text(a.diffusion.local_scaling), scaling_text(b.diffusion.local_scaling));
  return out;
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
      out->coordinates[static_cast<size_t>(i * m + c - 1)] = lt[static_cast<size_t>(c)] *
                                                             result.psi[static_cast<size_t>(i * nev + c)];
  return out;
}

}  // namespace manifold::ui
