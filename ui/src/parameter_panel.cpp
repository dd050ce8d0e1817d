#include "manifold/ui/parameter_panel.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QToolButton>
#include <QGroupBox>
#include <QLabel>
#include <QRegularExpressionValidator>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "manifold/error.h"
#include "manifold/printable.h"

namespace manifold::ui {
namespace {

/// "1st", "2nd", "3rd", "7th", "11th", "22nd".
QString ordinal(int n) { return QString::fromStdString(manifold::ordinal(n)); }

}  // namespace

ParameterPanel::ParameterPanel(QWidget* parent) : QWidget(parent) {
  // Built in the order of the tab chain: the graph's fields, then the
  // diffusion map's, then the re-embed switch.
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(build_graph_box());
  layout->addWidget(build_diffusion_box());
  auto_reembed_ = new QCheckBox(tr("Re-embed when a parameter changes"), this);
  auto_reembed_->setChecked(true);
  auto_reembed_
      ->setToolTip(tr("With a cached graph, changes of k (up to the graph's), \u03b5, \u03b1, t, "
                      "components, symmetrisation, local scaling or the budget re-embed at once."));
  layout->addWidget(auto_reembed_);
  layout->addStretch();

  connect_changes();
  update_enabled();
}

QGroupBox* ParameterPanel::build_graph_box() {
  auto* graph_box = new QGroupBox(tr("k-nearest-neighbour graph"), this);
  auto* graph = new QFormLayout(graph_box);
  k_ = new QSpinBox(graph_box);
  k_->setRange(1, 4096);
  k_->setValue(10);
  k_
      ->setToolTip(tr("Neighbours per point. Lowering k (or any embedding parameter) re-embeds at once from the "
                      "cached graph; a k above the cached graph's rebuilds it."));
  graph->addRow(tr("k"), k_);
  metric_ = new QComboBox(graph_box);
  metric_->addItem(tr("Euclidean"), "euclidean");
  metric_->addItem(tr("Cosine"), "cosine");
  metric_->addItem(tr("Pearson"), "pearson");
  metric_
      ->setToolTip(tr("Distance between images: Euclidean \u2016x\u2212y\u2016, cosine 1\u2212cos, "
                      "Pearson 1\u2212r (insensitive to brightness and contrast)."));
  graph->addRow(tr("Metric"), metric_);
  backend_ = new QComboBox(graph_box);
  backend_->addItem(tr("Auto (GPU if present)"), "auto");
  backend_->addItem(tr("CPU"), "cpu");
  backend_->addItem(tr("GPU"), "gpu");
  const bool gpu = backend_available("gpu");
  if (!gpu) {
    backend_->setItemData(2, false, Qt::UserRole - 1);  // disables the item
    backend_->setItemData(2, tr("No GPU backend in this build or no GPU present"), Qt::ToolTipRole);
  }
  backend_->addItem(tr("Cluster (profile)"), "cluster");
  backend_->setItemData(3,
                        tr("Submit the k-NN graph to a cluster (local mpirun or Slurm) described by a profile file; "
                           "the data must be on a file system the nodes see"),
                        Qt::ToolTipRole);
  backend_->setToolTip(tr("Where the exact k-NN graph is computed. Every backend gives the same graph."));
  graph->addRow(tr("Backend"), backend_);
  graph->addRow(tr("Profile"), build_profile_row(graph_box));
  devices_ = new QLineEdit(QStringLiteral("all"), graph_box);
  devices_->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("all|\\d+(,\\d+)*")),
                                                         devices_));
  devices_->setToolTip(tr("GPUs to use: \"all\" or a list of ordinals such as 0,1"));
  graph->addRow(tr("Devices"), devices_);
  return graph_box;
}

// The cluster profile's file, with buttons to choose and to edit it.
QWidget* ParameterPanel::build_profile_row(QWidget* parent) {
  profile_row_ = new QWidget(parent);
  auto* profile_layout = new QHBoxLayout(profile_row_);
  profile_layout->setContentsMargins(0, 0, 0, 0);
  profile_ = new QLineEdit(profile_row_);
  profile_->setPlaceholderText(tr("cluster profile (.json)"));
  profile_
      ->setToolTip(tr("A cluster profile: {\"kind\": \"mpirun\" | \"slurm\", \"ranks\", \"hostfile\", "
                      "\"partition\", \"work_dir\", ...} (see manifold submit)"));
  auto* browse = new QToolButton(profile_row_);
  browse->setText(QStringLiteral("\u2026"));
  browse->setToolTip(tr("Choose a cluster profile"));
  auto* edit = new QToolButton(profile_row_);
  edit->setText(tr("Edit"));
  edit->setToolTip(tr("Edit this profile, or write a new one (Run \u25b8 Cluster Profile)"));
  profile_layout->addWidget(profile_, 1);
  profile_layout->addWidget(browse);
  profile_layout->addWidget(edit);
  connect(edit, &QToolButton::clicked, this, &ParameterPanel::editProfileRequested);
  connect(browse, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Cluster profile"), QString(),
                                                      tr("Profiles (*.json);;All files (*)"));
    if (!path.isEmpty()) {
      profile_->setText(path);
      Q_EMIT profile_->editingFinished();
    }
  });
  return profile_row_;
}

QGroupBox* ParameterPanel::build_diffusion_box() {
  auto* embed_box = new QGroupBox(tr("Diffusion map"), this);
  auto* embed = new QFormLayout(embed_box);
  add_epsilon_rows(embed, embed_box);
  alpha_ = new QDoubleSpinBox(embed_box);
  alpha_->setRange(0, 1);
  alpha_->setSingleStep(0.5);
  alpha_->setDecimals(2);
  alpha_->setValue(1.0);
  alpha_
      ->setToolTip(tr("\u03b1-normalisation: 0 graph Laplacian, 0.5 Fokker\u2013Planck, 1 Laplace\u2013Beltrami "
                      "(removes the effect of the sampling density)."));
  embed->addRow(tr("\u03b1"), alpha_);
  t_ = new QDoubleSpinBox(embed_box);
  t_->setRange(0, 1000);
  t_->setDecimals(2);
  t_->setValue(1.0);
  t_
      ->setToolTip(tr("Diffusion time: coordinates are \u03bb\u1d62\u1d57 \u03c8\u1d62. Changing only t rescales the "
                      "coordinates without a new eigensolve."));
  embed->addRow(tr("t"), t_);
  components_ = new QSpinBox(embed_box);
  components_->setRange(1, 100);
  components_->setValue(10);
  components_->setToolTip(tr("Diffusion coordinates to compute (the trivial eigenvector is dropped)."));
  embed->addRow(tr("Components"), components_);
  symmetrize_ = new QComboBox(embed_box);
  symmetrize_->addItem(tr("or (either is a neighbour)"), "or");
  symmetrize_->addItem(tr("and (mutual neighbours)"), "and");
  symmetrize_->addItem(tr("average"), "average");
  symmetrize_->setToolTip(tr("How the directed k-NN graph is made symmetric."));
  embed->addRow(tr("Symmetrise"), symmetrize_);
  embed->addRow(tr("Local scaling"), build_local_scaling_row(embed_box));
  add_budget_rows(embed, embed_box);
  return embed_box;
}

// epsilon's mode, its value, and the BGH curve drawn when it is automatic.
void ParameterPanel::add_epsilon_rows(QFormLayout* embed, QWidget* embed_box) {
  epsilon_mode_ = new QComboBox(embed_box);
  epsilon_mode_->addItem(tr("Median at the k-th neighbour"), "median");
  epsilon_mode_->addItem(tr("Automatic (BGH)"), "auto");
  epsilon_mode_->addItem(tr("Value"), "value");
  epsilon_mode_
      ->setToolTip(tr("Kernel width \u03b5 of exp(\u2212r\u00b2/(\u03c3\u1d62\u03c3\u2c7c\u03b5)), where "
                      "r\u00b2 = d\u00b2 (Euclidean) or 2d (cosine, Pearson: the squared distance of the "
                      "unit-norm rows) and \u03c3 is the local scale (1 when local scaling is off): the "
                      "median over points of r\u00b2/(\u03c3\u1d62\u03c3\u2c7c) at the k-th neighbour, "
                      "the Berry\u2013Giannakis\u2013Harlim choice (the \u03b5 where log \u03a3K grows "
                      "fastest with log \u03b5), or a value."));
  embed->addRow(tr("\u03b5"), epsilon_mode_);
  epsilon_value_ = new QDoubleSpinBox(embed_box);
  epsilon_value_->setDecimals(6);
  epsilon_value_->setRange(1e-6, 1e12);
  epsilon_value_->setValue(1.0);
  epsilon_value_->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
  epsilon_value_
      ->setToolTip(tr("\u03b5 in the units of r\u00b2/(\u03c3\u1d62\u03c3\u2c7c): squared-distance units "
                      "when local scaling is off, a pure number when it is on. After a run it holds the "
                      "\u03b5 that run used."));
  embed->addRow(tr("\u03b5 value"), epsilon_value_);
  bgh_plot_ = new PlotWidget(embed_box);
  bgh_plot_->setStyle(PlotWidget::Style::Line);
  bgh_plot_->setLogX(true);
  bgh_plot_->setTitles(tr("BGH: d log \u03a3K / d log \u03b5"), tr("\u03b5"), tr("slope"));
  bgh_plot_->clear(tr("Run with \u03b5 automatic to see the curve."));
  bgh_plot_->setMinimumHeight(130);
  // The curve takes the width the panel has; its own wish (280 px) must not
  // widen the dock when it appears.
  bgh_plot_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  embed->addRow(bgh_plot_);
}

// Local scaling has three kinds of value (auto, off, a neighbour j), so a
// mode and the neighbour it may name rather than one spin box with two
// special values.
QWidget* ParameterPanel::build_local_scaling_row(QWidget* embed_box) {
  auto* scaling_row = new QWidget(embed_box);
  auto* scaling_layout = new QHBoxLayout(scaling_row);
  scaling_layout->setContentsMargins(0, 0, 0, 0);
  local_scaling_mode_ = new QComboBox(scaling_row);
  local_scaling_mode_->addItem(QString(), "auto");  // named by update_enabled(): the neighbour depends on k
  local_scaling_mode_->addItem(tr("off"), "off");
  local_scaling_mode_->addItem(tr("neighbour"), "neighbour");
  local_scaling_mode_->setToolTip(tr("Self-tuning local scaling (Zelnik-Manor and Perona): \u03c3\u1d62 = r to the "
                                     "j-th neighbour of point i. auto: j = min(%1, k), past duplicate images "
                                     "the nearest distinct neighbour; off: \u03c3 = 1; or a neighbour j of "
                                     "your choice.")
                                      .arg(kLocalScalingAutoNeighbour));
  local_scaling_neighbour_ = new QSpinBox(scaling_row);
  local_scaling_neighbour_->setRange(1, 4096);
  local_scaling_neighbour_->setValue(kLocalScalingAutoNeighbour);
  local_scaling_neighbour_->setPrefix(QStringLiteral("j = "));
  local_scaling_neighbour_->setToolTip(tr("The neighbour whose distance is \u03c3\u1d62 (1 to k)."));
  scaling_layout->addWidget(local_scaling_mode_, 1);
  scaling_layout->addWidget(local_scaling_neighbour_);
  return scaling_row;
}

// The eigensolve's budget: mat-vecs and seconds.
void ParameterPanel::add_budget_rows(QFormLayout* embed, QWidget* embed_box) {
  max_matvecs_ = new QSpinBox(embed_box);
  max_matvecs_->setRange(0, std::numeric_limits<int>::max());
  max_matvecs_->setSingleStep(1000);
  max_matvecs_->setGroupSeparatorShown(true);
  max_matvecs_->setSpecialValueText(tr("no limit"));
  max_matvecs_->setValue(static_cast<int>(kDefaultMaxMatvecs));
  max_matvecs_
      ->setToolTip(tr("Eigensolve budget: products with the kernel matrix (a block solver's product "
                      "with a whole block counts once). A solve that spends it stops and says why in one "
                      "line; the previous embedding stays in view. 0 = no limit."));
  embed->addRow(tr("Max mat-vecs"), max_matvecs_);
  time_limit_ = new QDoubleSpinBox(embed_box);
  time_limit_->setRange(0, 86400);
  time_limit_->setDecimals(1);
  time_limit_->setSuffix(tr(" s"));
  time_limit_->setSpecialValueText(tr("none"));
  time_limit_->setToolTip(tr("Eigensolve budget in seconds, as for the mat-vecs. 0 = none."));
  embed->addRow(tr("Time limit"), time_limit_);
}

// Every edit re-checks which fields apply and, unless parameters are being
// loaded, says the parameters changed.
void ParameterPanel::connect_changes() {
  auto notify = [this] {
    update_enabled();
    if (!loading_) Q_EMIT changed();
  };
  connect(k_, &QSpinBox::valueChanged, this, notify);
  connect(metric_, &QComboBox::currentIndexChanged, this, notify);
  connect(backend_, &QComboBox::currentIndexChanged, this, notify);
  connect(devices_, &QLineEdit::editingFinished, this, notify);
  connect(profile_, &QLineEdit::editingFinished, this, notify);
  connect(epsilon_mode_, &QComboBox::currentIndexChanged, this, notify);
  connect(epsilon_value_, &QDoubleSpinBox::valueChanged, this, [this, notify] {
    if (epsilon_mode_->currentData().toString() == "value") notify();
  });
  connect(alpha_, &QDoubleSpinBox::valueChanged, this, notify);
  connect(t_, &QDoubleSpinBox::valueChanged, this, notify);
  connect(components_, &QSpinBox::valueChanged, this, notify);
  connect(symmetrize_, &QComboBox::currentIndexChanged, this, notify);
  connect(local_scaling_mode_, &QComboBox::currentIndexChanged, this, notify);
  connect(local_scaling_neighbour_, &QSpinBox::valueChanged, this, [this, notify] {
    if (local_scaling_mode_->currentData().toString() == "neighbour") notify();
  });
  connect(max_matvecs_, &QSpinBox::valueChanged, this, notify);
  connect(time_limit_, &QDoubleSpinBox::valueChanged, this, notify);
}

void ParameterPanel::update_enabled() {
  const QString mode = epsilon_mode_->currentData().toString();
  epsilon_value_->setEnabled(mode == "value");
  bgh_plot_->setVisible(mode == "auto");
  const QString backend = backend_->currentData().toString();
  devices_->setEnabled((backend == "auto" || backend == "gpu") && backend_available("gpu"));
  profile_row_->setEnabled(backend == "cluster");
  local_scaling_neighbour_->setMaximum(k_->value());
  local_scaling_neighbour_->setEnabled(local_scaling_mode_->currentData().toString() == "neighbour");
  DiffusionParams automatic;
  automatic.local_scaling = kLocalScalingAuto;
  local_scaling_mode_->setItemText(0, tr("auto (%1)").arg(ordinal(local_scaling_neighbour(automatic, k_->value()))));
}

RunParameters ParameterPanel::parameters() const {
  RunParameters p;
  p.knn.k = k_->value();
  p.knn.metric = parse_metric(metric_->currentData().toString().toStdString());
  p.backend = backend_->currentData().toString().toStdString();
  if (p.backend == "cluster") p.cluster_profile = profile_->text().trimmed().toStdString();
  const QString devices = devices_->text().trimmed();
  if (!devices.isEmpty() && devices != "all")
    for (const QString& d : devices.split(',', Qt::SkipEmptyParts)) p.knn.devices.push_back(d.toInt());
  const QString mode = epsilon_mode_->currentData().toString();
  if (mode == "value") {
    std::ostringstream text;
    text.precision(17);
    text << epsilon_value_->value();
    p.diffusion.epsilon = text.str();
  } else {
    p.diffusion.epsilon = mode.toStdString();
  }
  p.diffusion.k = k_->value();
  p.diffusion.alpha = alpha_->value();
  p.diffusion.t = t_->value();
  p.diffusion.components = components_->value();
  p.diffusion.symmetrize = symmetrize_->currentData().toString().toStdString();
  const QString scaling = local_scaling_mode_->currentData().toString();
  p.diffusion.local_scaling = scaling == "auto"  ? kLocalScalingAuto
                              : scaling == "off" ? 0
                                                 : local_scaling_neighbour_->value();
  p.diffusion.max_matvecs = max_matvecs_->value();
  p.diffusion.time_limit_s = time_limit_->value();
  return p;
}

void ParameterPanel::setParameters(const RunParameters& p) {
  loading_ = true;
  k_->setValue(p.diffusion.k > 0 ? std::min(p.diffusion.k, p.knn.k) : p.knn.k);
  metric_->setCurrentIndex(metric_->findData(QString::fromStdString(to_string(p.knn.metric))));
  backend_->setCurrentIndex(std::max(0, backend_->findData(QString::fromStdString(p.backend))));
  if (!p.cluster_profile.empty()) profile_->setText(QString::fromStdString(p.cluster_profile));
  QStringList devices;
  for (int d : p.knn.devices) devices << QString::number(d);
  devices_->setText(devices.isEmpty() ? QStringLiteral("all") : devices.join(','));
  const QString eps = QString::fromStdString(p.diffusion.epsilon);
  if (eps == "median" || eps == "auto") {
    epsilon_mode_->setCurrentIndex(epsilon_mode_->findData(eps));
  } else {
    epsilon_mode_->setCurrentIndex(epsilon_mode_->findData("value"));
    epsilon_value_->setValue(eps.toDouble());
  }
  alpha_->setValue(p.diffusion.alpha);
  t_->setValue(p.diffusion.t);
  components_->setValue(p.diffusion.components);
  symmetrize_->setCurrentIndex(std::max(0, symmetrize_->findData(QString::fromStdString(p.diffusion.symmetrize))));
  const int scaling = p.diffusion.local_scaling;
  local_scaling_mode_->setCurrentIndex(local_scaling_mode_->findData(scaling == kLocalScalingAuto ? "auto"
                                                                     : scaling == 0               ? "off"
                                                                                                  : "neighbour"));
  if (scaling > 0) local_scaling_neighbour_->setValue(scaling);
  max_matvecs_->setValue(static_cast<int>(std::clamp<int64_t>(p.diffusion.max_matvecs, 0, max_matvecs_->maximum())));
  time_limit_->setValue(p.diffusion.time_limit_s);
  loading_ = false;
  update_enabled();
}

void ParameterPanel::setPointCount(int64_t n) {
  loading_ = true;
  k_->setMaximum(static_cast<int>(std::clamp<int64_t>(n - 1, 1, 4096)));
  components_->setMaximum(static_cast<int>(std::clamp<int64_t>(n - 2, 1, 100)));
  loading_ = false;
}

void ParameterPanel::showEpsilonResult(double epsilon, const nlohmann::json& bgh) {
  if (epsilon_mode_->currentData().toString() != "value") {
    const QSignalBlocker block(epsilon_value_);
    epsilon_value_->setValue(epsilon);
  }
  if (bgh.is_object() && bgh.contains("epsilon") && bgh.contains("slope")) {
    std::vector<double> x = bgh["epsilon"].get<std::vector<double>>();
    std::vector<double> y = bgh["slope"].get<std::vector<double>>();
    bgh_plot_->setData(std::move(x), std::move(y));
    QString label = tr("\u03b5 = %1").arg(epsilon, 0, 'g', 4);
    if (bgh.contains("dimension") && bgh["dimension"].is_number())
      label += tr(", dim \u2248 %1").arg(bgh["dimension"].get<double>(), 0, 'f', 1);
    bgh_plot_->setMarker(epsilon, label);
  } else {
    bgh_plot_->clear(tr("Run with \u03b5 automatic to see the curve."));
  }
}

}  // namespace manifold::ui
