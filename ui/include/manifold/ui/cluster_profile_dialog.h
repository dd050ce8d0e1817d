#pragma once
// Edits a cluster profile (the JSON file `manifold submit` and the Cluster
// backend read): kind, name, work folder, program paths, ranks or Slurm's
// partition, nodes, GPUs and time limit, extra arguments and environment.
// Every check is the core's own (cluster::parse_profile), run as the user
// types, so the dialog accepts exactly the profiles the loader accepts.
#include <QComboBox>
#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>

#include <nlohmann/json.hpp>

namespace manifold::ui {

class ClusterProfileDialog : public QDialog {
  Q_OBJECT

 public:
  explicit ClusterProfileDialog(QWidget* parent = nullptr);

  /// Fills the fields from a profile file; false (and the reason in
  /// problem()) when it cannot be read or is not a valid profile.
  bool load(const QString& path);
  /// Validates and writes the profile to `path` (whole or not at all);
  /// false with the reason in problem() otherwise.
  bool save(const QString& path);
  /// The profile the fields describe, as the file would hold it.
  nlohmann::json profileJson() const;
  /// The core's objection to the fields ("" when they form a valid profile).
  QString problem() const { return problem_->text(); }
  QString path() const { return path_; }

  QComboBox* kindEditor() const { return kind_; }
  QLineEdit* nameEditor() const { return name_; }
  QLineEdit* workDirEditor() const { return work_dir_; }
  QSpinBox* ranksEditor() const { return ranks_; }
  QLineEdit* hostfileEditor() const { return hostfile_; }
  QLineEdit* partitionEditor() const { return partition_; }
  QSpinBox* nodesEditor() const { return nodes_; }
  QSpinBox* ranksPerNodeEditor() const { return ranks_per_node_; }
  QSpinBox* gpusPerNodeEditor() const { return gpus_per_node_; }
  QLineEdit* timeLimitEditor() const { return time_limit_; }
  QLineEdit* extraArgsEditor() const { return extra_args_; }
  QPlainTextEdit* envEditor() const { return env_; }

 private:
  void update_kind();
  /// Runs the core's check on the fields and shows its verdict.
  bool check();
  void save_as();

  QString path_;
  QComboBox* kind_;
  QLineEdit *name_, *work_dir_, *manifold_, *mpirun_, *hostfile_, *partition_, *time_limit_, *extra_args_;
  QSpinBox *ranks_, *nodes_, *ranks_per_node_, *gpus_per_node_;
  QPlainTextEdit* env_;
  QWidget *mpirun_rows_, *slurm_rows_;
  QLabel* problem_;
  QPushButton* save_button_;
};

}  // namespace manifold::ui
