// The Clusters section of the Metadata dock (see cluster_panel.h).
#include "manifold/ui/cluster_panel.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QPixmap>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "manifold/error.h"
#include "manifold/ui/palette.h"

namespace manifold::ui {

EmbeddingClustering clusterOutcome(const EmbeddingOutcome& outcome, int coordinates, int clusters) {
  const DiffusionResult& r = *outcome.result;
  // The components of the graph the embedding used: a cached graph may hold
  // more neighbours than its k, and more neighbours join more pieces; the
  // "and" rule keeps only mutual pairs.
  const KnnGraph& graph = *outcome.graph;
  const std::vector<int32_t> components = graph_components(embedded_graph(graph, r.k,
                                                                          outcome.params.diffusion.symmetrize));
  EmbeddingClusteringParams p;
  p.clusters = clusters;
  p.coordinates = coordinates;
  try {
    return cluster_embedding(r.coordinates.data(), r.n, r.m, r.point_index.data(), r.eigenvalues, components, graph.n,
                             p);
  } catch (const UsageError& e) {
    // Core names the CLI's options; the panel calls them K and m.
    QString message = QString::fromStdString(e.what());
    message.replace(QStringLiteral("--clusters "), QStringLiteral("K = "));
    message.replace(QStringLiteral("--coordinates "), QStringLiteral("m = "));
    throw UsageError(message.toStdString());
  }
}

ClusterPanel::ClusterPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("clusterPanel"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* controls = new QHBoxLayout;
  coordinates_ = new QSpinBox(this);
  coordinates_->setObjectName(QStringLiteral("clusterCoordinates"));
  coordinates_->setRange(0, 1);
  coordinates_->setSpecialValueText(tr("auto"));
  coordinates_->setToolTip(tr("m: k-means runs on ψ1…ψm (auto: K − 1, which tells K pieces apart)"));
  clusters_ = new QSpinBox(this);
  clusters_->setObjectName(QStringLiteral("clusterCount"));
  clusters_->setRange(0, 64);
  clusters_->setSpecialValueText(tr("auto"));
  clusters_
      ->setToolTip(tr("K: the number of clusters (auto: the k-NN graph's separate pieces when it falls "
                      "apart, else the largest gap between eigenvalues)"));
  run_ = new QPushButton(tr("Cluster"), this);
  run_->setObjectName(QStringLiteral("clusterButton"));
  run_
      ->setToolTip(tr("Cluster the points shown (spectral clustering: k-means on the first diffusion "
                      "coordinates); the result is the column \"cluster\""));
  controls->addWidget(new QLabel(tr("K"), this));
  controls->addWidget(clusters_);
  controls->addWidget(new QLabel(tr("m"), this));
  controls->addWidget(coordinates_);
  controls->addWidget(run_);
  controls->addStretch(1);
  layout->addLayout(controls);
  list_ = new QListWidget(this);
  list_->setObjectName(QStringLiteral("clusterList"));
  list_->setToolTip(tr("Click a cluster to select its points"));
  list_->setMaximumHeight(110);
  list_->hide();  // shown once there are clusters
  layout->addWidget(list_);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  connect(run_, &QPushButton::clicked, this, [this] { cluster(coordinates(), clusters()); });
  connect(list_, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* item) { Q_EMIT clusterPicked(item->data(Qt::UserRole).toInt()); });
  connect(&watcher_, &QFutureWatcher<Job>::finished, this, &ClusterPanel::on_finished);
  update_controls();
}

ClusterPanel::~ClusterPanel() { watcher_.waitForFinished(); }

void ClusterPanel::setEmbedding(std::shared_ptr<const EmbeddingOutcome> outcome) {
  outcome_ = std::move(outcome);
  const int m = outcome_ ? outcome_->result->m : 1;
  coordinates_->setMaximum(std::max(1, m));
  update_controls();
}

int ClusterPanel::coordinates() const { return coordinates_->value(); }
int ClusterPanel::clusters() const { return clusters_->value(); }

void ClusterPanel::setChoice(int coordinates, int clusters) {
  coordinates_->setMaximum(std::max(coordinates_->maximum(), coordinates));
  coordinates_->setValue(coordinates);
  clusters_->setValue(clusters);
}

void ClusterPanel::cluster(int coordinates, int clusters) {
  if (!outcome_ || busy()) return;
  summary_->setText(tr("Clustering\u2026"));
  // k-means restarts on every point take long on large sets: a worker keeps
  // the window responsive, and holds the embedding it was given.
  watcher_.setFuture(QtConcurrent::run([of = outcome_, coordinates, clusters]() -> Job {
    Job job;
    job.of = of;
    try {
      job.result = std::make_shared<const EmbeddingClustering>(clusterOutcome(*of, coordinates, clusters));
    } catch (const std::exception& e) {
      job.error = QString::fromStdString(e.what());
    }
    return job;
  }));
  update_controls();
}

void ClusterPanel::on_finished() {
  const Job job = watcher_.result();
  update_controls();
  if (!job.result) {
    summary_->setText(job.error);
    Q_EMIT failed(job.error);
    return;
  }
  Q_EMIT clustered(job.result, job.of);
}

void ClusterPanel::showClusters(const std::vector<int64_t>& sizes, const QString& summary) {
  list_->clear();
  const QLocale en(QLocale::English);
  for (size_t c = 0; c < sizes.size(); ++c) {
    QPixmap swatch(12, 12);
    swatch.fill(categoryColour(static_cast<int>(c)));
    auto* item = new QListWidgetItem(QIcon(swatch), tr("cluster %1 \u00b7 %2 points")
                                                        .arg(c)
                                                        .arg(en.toString(static_cast<qlonglong>(sizes[c]))));
    item->setData(Qt::UserRole, static_cast<int>(c));
    list_->addItem(item);
  }
  list_->setVisible(!sizes.empty());
  summary_->setText(summary);
}

void ClusterPanel::clearClusters() {
  list_->clear();
  list_->hide();
  summary_->clear();
}

QString ClusterPanel::summary() const { return summary_->text(); }

void ClusterPanel::update_controls() { run_->setEnabled(outcome_ != nullptr && !busy()); }

}  // namespace manifold::ui
