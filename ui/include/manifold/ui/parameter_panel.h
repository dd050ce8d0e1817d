#pragma once
// The run parameters: the graph (k, metric, backend and devices) and the
// diffusion map (epsilon, alpha, t, components, symmetrisation, local
// scaling, the eigensolve's budget), each with a tooltip and the defaults of
// the CLI. When epsilon is chosen automatically the Berry-Giannakis-Harlim
// curve of the last run is drawn under it.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "manifold/ui/plot_widget.h"
#include "manifold/ui/run_parameters.h"

namespace manifold::ui {

class ParameterPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ParameterPanel(QWidget* parent = nullptr);

  RunParameters parameters() const;
  void setParameters(const RunParameters& params);
  /// Limits k and the number of components for a dataset of n points.
  void setPointCount(int64_t n);
  /// Shows the epsilon the last run used (and its BGH curve when automatic).
  void showEpsilonResult(double epsilon, const nlohmann::json& bgh);
  bool autoReembed() const { return auto_reembed_->isChecked(); }
  void setAutoReembed(bool on) { auto_reembed_->setChecked(on); }
  PlotWidget* bghPlot() const { return bgh_plot_; }

  // The editors, for tests and for the main window's shortcuts.
  QSpinBox* kEditor() const { return k_; }
  QComboBox* metricEditor() const { return metric_; }
  QComboBox* epsilonModeEditor() const { return epsilon_mode_; }
  QDoubleSpinBox* epsilonValueEditor() const { return epsilon_value_; }
  QDoubleSpinBox* alphaEditor() const { return alpha_; }
  QDoubleSpinBox* timeEditor() const { return t_; }
  QSpinBox* componentsEditor() const { return components_; }
  QComboBox* symmetrizeEditor() const { return symmetrize_; }
  /// Local scaling: "auto", "off" or "neighbour" (the neighbour editor's j).
  QComboBox* localScalingModeEditor() const { return local_scaling_mode_; }
  QSpinBox* localScalingNeighbourEditor() const { return local_scaling_neighbour_; }
  QSpinBox* maxMatvecsEditor() const { return max_matvecs_; }
  QDoubleSpinBox* timeLimitEditor() const { return time_limit_; }
  QComboBox* backendEditor() const { return backend_; }
  QLineEdit* clusterProfileEditor() const { return profile_; }

 Q_SIGNALS:
  /// Any parameter changed (emitted once per edit).
  void changed();
  /// The profile row's Edit button: open the cluster-profile editor.
  void editProfileRequested();

 private:
  // The constructor's phases, in the order of the tab chain.
  QGroupBox* build_graph_box();
  QWidget* build_profile_row(QWidget* parent);
  QGroupBox* build_diffusion_box();
  void add_epsilon_rows(QFormLayout* embed, QWidget* embed_box);
  QWidget* build_local_scaling_row(QWidget* embed_box);
  void add_budget_rows(QFormLayout* embed, QWidget* embed_box);
  void connect_changes();
  void update_enabled();

  QSpinBox* k_;
  QComboBox* metric_;
  QComboBox* backend_;
  QLineEdit* devices_;
  QLineEdit* profile_;
  QWidget* profile_row_;
  QComboBox* epsilon_mode_;
  QDoubleSpinBox* epsilon_value_;
  QDoubleSpinBox* alpha_;
  QDoubleSpinBox* t_;
  QSpinBox* components_;
  QComboBox* symmetrize_;
  QComboBox* local_scaling_mode_;
  QSpinBox* local_scaling_neighbour_;
  QSpinBox* max_matvecs_;
  QDoubleSpinBox* time_limit_;
  QCheckBox* auto_reembed_;
  PlotWidget* bgh_plot_;
  bool loading_ = false;
};

}  // namespace manifold::ui
