#pragma once
// The Metadata dock's Clusters section: spectral clustering of the embedding
// shown (core's cluster_embedding, as `manifold cluster` does it: the k-NN
// graph's separate components, then k-means on the first m diffusion
// coordinates, K given or from the eigengap), computed off the GUI thread,
// and the list of clusters it found. The window turns a result into the
// categorical column "cluster" and a click on a cluster's row into the
// selection of its points.
#include <QFutureWatcher>
#include <QWidget>

#include <memory>
#include <vector>

#include "manifold/clustering.h"
#include "manifold/ui/job_runner.h"

class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace manifold::ui {

class ClusterPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ClusterPanel(QWidget* parent = nullptr);
  ~ClusterPanel() override;

  /// The embedding to cluster (null: none; the Cluster button is disabled).
  void setEmbedding(std::shared_ptr<const EmbeddingOutcome> outcome);
  /// Starts clustering the embedding with m = `coordinates` (0: K - 1) and
  /// K = `clusters` (0: estimated); clustered() or failed() follows.
  void cluster(int coordinates, int clusters);
  bool busy() const { return watcher_.isRunning(); }

  /// The controls' choice (0 = automatic), as a session keeps it.
  int coordinates() const;
  int clusters() const;
  void setChoice(int coordinates, int clusters);

  /// Lists the clusters: row i is cluster i, `sizes[i]` points; `summary`
  /// under the list (how K was chosen, agreement with a column).
  void showClusters(const std::vector<int64_t>& sizes, const QString& summary);
  /// Empties the list (a new dataset).
  void clearClusters();
  QListWidget* list() const { return list_; }
  QString summary() const;

 Q_SIGNALS:
  /// A clustering of `of` finished.
  void clustered(std::shared_ptr<const EmbeddingClustering> result, std::shared_ptr<const EmbeddingOutcome> of);
  /// One line saying why clustering failed.
  void failed(const QString& message);
  /// The user clicked cluster `code`'s row.
  void clusterPicked(int code);

 private:
  struct Job {
    std::shared_ptr<const EmbeddingClustering> result;
    std::shared_ptr<const EmbeddingOutcome> of;
    QString error;
  };
  void on_finished();
  void update_controls();

  std::shared_ptr<const EmbeddingOutcome> outcome_;
  QSpinBox* coordinates_;
  QSpinBox* clusters_;
  QPushButton* run_;
  QListWidget* list_;
  QLabel* summary_;
  QFutureWatcher<Job> watcher_;
};

/// The clustering of `outcome`'s embedding (its graph's components at the
/// embedding's k, then k-means; see cluster_embedding). Throws UsageError
/// naming K or m, in the GUI's words.
EmbeddingClustering clusterOutcome(const EmbeddingOutcome& outcome, int coordinates, int clusters);

}  // namespace manifold::ui
