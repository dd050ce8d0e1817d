#include "manifold/ui/cluster_profile_dialog.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QPushButton>
#include <QSaveFile>
#include <QVBoxLayout>

#include <limits>

#include "manifold/cluster.h"
#include "manifold/ui/file_dialogs.h"

namespace manifold::ui {
namespace {

QString text_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? QString::fromStdString(j[key].get<std::string>()) : QString();
}

int int_of(const nlohmann::json& j, const char* key, int fallback) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int>() : fallback;
}

/// Arguments as typed: separated by spaces (an argument with spaces is one
/// line of the profile file; edit the file for that).
std::vector<std::string> split_args(const QString& text) {
  std::vector<std::string> out;
  for (const QString& a : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) out.push_back(a.toStdString());
  return out;
}

QString join_args(const nlohmann::json& j, const char* key) {
  QStringList parts;
  if (j.contains(key) && j[key].is_array())
    for (const auto& a : j[key])
      if (a.is_string()) parts << QString::fromStdString(a.get<std::string>());
  return parts.join(QLatin1Char(' '));
}

QSpinBox* count_box(QWidget* parent, int minimum, int value, const QString& tip) {
  auto* box = new QSpinBox(parent);
  box->setRange(minimum, 1 << 20);
  box->setValue(value);
  box->setToolTip(tip);
  return box;
}

}  // namespace

ClusterProfileDialog::ClusterProfileDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Cluster profile"));
  auto* layout = new QVBoxLayout(this);
  auto* common = new QFormLayout;
  kind_ = new QComboBox(this);
  kind_->addItem(tr("mpirun (this machine or a host file)"), "mpirun");
  kind_->addItem(tr("Slurm (sbatch)"), "slurm");
  common->addRow(tr("Kind"), kind_);
  name_ = new QLineEdit(this);
  name_->setPlaceholderText(tr("the file name"));
  common->addRow(tr("Name"), name_);
  work_dir_ = new QLineEdit(this);
  work_dir_->setPlaceholderText(tr("job folders go here (Slurm: a folder every node sees)"));
  common->addRow(tr("Work folder"), work_dir_);
  manifold_ = new QLineEdit(this);
  manifold_->setPlaceholderText(tr("the manifold program on the nodes (default: this one)"));
  common->addRow(tr("Program"), manifold_);
  mpirun_ = new QLineEdit(QStringLiteral("mpirun"), this);
  common->addRow(tr("mpirun command"), mpirun_);
  extra_args_ = new QLineEdit(this);
  extra_args_->setToolTip(tr("Extra arguments separated by spaces: mpirun's for kind mpirun, sbatch's for Slurm"));
  common->addRow(tr("Extra arguments"), extra_args_);
  env_ = new QPlainTextEdit(this);
  env_->setPlaceholderText(tr("NAME=value, one a line"));
  env_->setMaximumHeight(70);
  common->addRow(tr("Environment"), env_);
  layout->addLayout(common);

  mpirun_rows_ = new QGroupBox(tr("mpirun"), this);
  auto* mpirun = new QFormLayout(mpirun_rows_);
  ranks_ = count_box(mpirun_rows_, 1, 1, tr("MPI ranks"));
  mpirun->addRow(tr("Ranks"), ranks_);
  hostfile_ = new QLineEdit(mpirun_rows_);
  hostfile_->setPlaceholderText(tr("optional"));
  mpirun->addRow(tr("Host file"), hostfile_);
  layout->addWidget(mpirun_rows_);

  slurm_rows_ = new QGroupBox(tr("Slurm"), this);
  auto* slurm = new QFormLayout(slurm_rows_);
  partition_ = new QLineEdit(slurm_rows_);
  partition_->setPlaceholderText(tr("the cluster's default"));
  slurm->addRow(tr("Partition"), partition_);
  nodes_ = count_box(slurm_rows_, 1, 1, tr("Nodes"));
  slurm->addRow(tr("Nodes"), nodes_);
  ranks_per_node_ = count_box(slurm_rows_, 1, 1, tr("MPI ranks on each node"));
  slurm->addRow(tr("Ranks per node"), ranks_per_node_);
  gpus_per_node_ = count_box(slurm_rows_, 0, 0, tr("GPUs on each node"));
  slurm->addRow(tr("GPUs per node"), gpus_per_node_);
  time_limit_ = new QLineEdit(QStringLiteral("01:00:00"), slurm_rows_);
  time_limit_->setToolTip(tr("Slurm's form: minutes, HH:MM:SS or D-HH:MM:SS"));
  slurm->addRow(tr("Time limit"), time_limit_);
  layout->addWidget(slurm_rows_);

  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("color: #a00000"));
  layout->addWidget(problem_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
  save_button_ = buttons->button(QDialogButtonBox::Save);
  layout->addWidget(buttons);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(save_button_, &QPushButton::clicked, this, &ClusterProfileDialog::save_as);

  connect(kind_, &QComboBox::currentIndexChanged, this, &ClusterProfileDialog::update_kind);
  for (QLineEdit* e : {name_, work_dir_, manifold_, mpirun_, hostfile_, partition_, time_limit_, extra_args_})
    connect(e, &QLineEdit::textChanged, this, &ClusterProfileDialog::check);
  for (QSpinBox* b : {ranks_, nodes_, ranks_per_node_, gpus_per_node_})
    connect(b, &QSpinBox::valueChanged, this, &ClusterProfileDialog::check);
  connect(env_, &QPlainTextEdit::textChanged, this, &ClusterProfileDialog::check);
  update_kind();
}

void ClusterProfileDialog::update_kind() {
  const bool slurm = kind_->currentData().toString() == "slurm";
  mpirun_rows_->setVisible(!slurm);
  slurm_rows_->setVisible(slurm);
  check();
}

nlohmann::json ClusterProfileDialog::profileJson() const {
  nlohmann::json j;
  const bool slurm = kind_->currentData().toString() == "slurm";
  j["kind"] = slurm ? "slurm" : "mpirun";
  auto put = [&j](const char* key, const QLineEdit* e) {
    const QString v = e->text().trimmed();
    if (!v.isEmpty()) j[key] = v.toStdString();
  };
  put("name", name_);
  put("work_dir", work_dir_);
  put("manifold", manifold_);
  put("mpirun", mpirun_);
  // The env's lines are NAME=value; a line without '=' goes to the core as
  // it is, so its check names the problem.
  nlohmann::json env = nlohmann::json::object();
  for (const QString& line : env_->toPlainText().split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
    const int eq = line.indexOf(QLatin1Char('='));
    env[(eq < 0 ? line : line.left(eq)).trimmed().toStdString()] = eq < 0
                                                                       ? nlohmann::json()
                                                                       : nlohmann::json(line.mid(eq + 1).toStdString());
  }
  if (!env.empty()) j["env"] = env;
  const std::vector<std::string> args = split_args(extra_args_->text());
  if (slurm) {
    put("partition", partition_);
    j["nodes"] = nodes_->value();
    j["ranks_per_node"] = ranks_per_node_->value();
    j["gpus_per_node"] = gpus_per_node_->value();
    j["time_limit"] = time_limit_->text().trimmed().toStdString();
    if (!args.empty()) j["sbatch_args"] = args;
  } else {
    j["ranks"] = ranks_->value();
    put("hostfile", hostfile_);
    if (!args.empty()) j["mpirun_args"] = args;
  }
  return j;
}

bool ClusterProfileDialog::check() {
  const QString origin = path_.isEmpty() ? tr("the profile") : path_;
  QString problem;
  try {
    cluster::parse_profile(profileJson(), origin.toStdString());
  } catch (const std::exception& e) {
    problem = QString::fromStdString(e.what());
  }
  problem_->setText(problem);
  save_button_->setEnabled(problem.isEmpty());
  return problem.isEmpty();
}

bool ClusterProfileDialog::load(const QString& path) {
  path_ = path;
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    problem_->setText(tr("%1: cannot open the cluster profile").arg(path));
    return false;
  }
  const nlohmann::json j = nlohmann::json::parse(file.readAll().toStdString(), nullptr, false);
  if (!j.is_object()) {
    problem_->setText(tr("%1: the cluster profile is not a JSON object").arg(path));
    return false;
  }
  // The file's own values (relative paths as written), not load_profile()'s
  // anchored ones, so saving writes back what was read.
  kind_->setCurrentIndex(std::max(0, kind_->findData(text_of(j, "kind"))));
  name_->setText(text_of(j, "name"));
  work_dir_->setText(text_of(j, "work_dir"));
  manifold_->setText(text_of(j, "manifold"));
  mpirun_->setText(j.contains("mpirun") ? text_of(j, "mpirun") : QStringLiteral("mpirun"));
  ranks_->setValue(int_of(j, "ranks", 1));
  hostfile_->setText(text_of(j, "hostfile"));
  partition_->setText(text_of(j, "partition"));
  nodes_->setValue(int_of(j, "nodes", 1));
  ranks_per_node_->setValue(int_of(j, "ranks_per_node", 1));
  gpus_per_node_->setValue(int_of(j, "gpus_per_node", 0));
  time_limit_->setText(j.contains("time_limit") ? text_of(j, "time_limit") : QStringLiteral("01:00:00"));
  extra_args_->setText(join_args(j, text_of(j, "kind") == "slurm" ? "sbatch_args" : "mpirun_args"));
  QStringList env;
  if (j.contains("env") && j["env"].is_object())
    for (const auto& [k, v] : j["env"].items())
      env << QString::fromStdString(k) + QLatin1Char('=') +
                 (v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString());
  env_->setPlainText(env.join(QLatin1Char('\n')));
  return check();
}

bool ClusterProfileDialog::save(const QString& path) {
  path_ = path;
  if (!check()) return false;
  QSaveFile file(path);
  const QByteArray text = QByteArray::fromStdString(profileJson().dump(2) + "\n");
  if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size() || !file.commit()) {
    problem_->setText(tr("%1: cannot write the profile (%2)").arg(path, file.errorString()));
    return false;
  }
  return true;
}

void ClusterProfileDialog::save_as() {
  const QString name = path_.isEmpty() ? QStringLiteral("cluster-profile.json") : QFileInfo(path_).fileName();
  const QString path = path_.isEmpty() ? askSavePath(this, tr("Save cluster profile"), tr("Profiles (*.json)"), ".json",
                                                     QStringLiteral("profiles"), name)
                                       : path_;
  if (!path.isEmpty() && save(path)) accept();
}

}  // namespace manifold::ui
