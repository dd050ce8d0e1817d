#pragma once
// The correlation of the user's metadata columns with the diffusion
// coordinates, as a small table that fits a narrow dock: one row per column
// (its name, the statistic's symbol r, eta or R), for angles the best
// atan2(psi_j, psi_i) pair (Fisher-Lee), then one cell per psi_k (Pearson r,
// correlation ratio eta, or circular-linear R for angles; see
// manifold/metadata.h) with two decimals, as many as fit the width. The best cell of each row is highlighted (bold,
// tinted). Clicking a row asks for colouring by that column (columnChosen).
//
// Self-contained: the main window owns the MetadataTable, puts this widget
// in a dock, and colours by metadataValues() when columnChosen() fires
// (angles with colour_maps.h's cyclic map, categories with categoricalColour).
#include <QString>
#include <QTableWidget>
#include <cstdint>
#include <vector>

#include "manifold/metadata.h"

namespace manifold::ui {

/// The values of `column` for the embedded points (row point_index[e] for
/// point e), as EmbeddingView's PointColours takes them: numbers as they
/// are, angles in radians, categories as their codes; NaN when missing or
/// when an index is out of range.
std::vector<float> metadataValues(const MetadataColumn& column, const std::vector<int64_t>& point_index);

class MetadataTableWidget : public QTableWidget {
  Q_OBJECT

 public:
  explicit MetadataTableWidget(QWidget* parent = nullptr);

  /// Computes and shows the correlation of every column of `table` with the
  /// n x m coordinates (row-major; pass psi_1..psi_m, or the diffusion
  /// coordinates: only the atan2 pair sees their scaling, and it
  /// standardises them), point e standing for table row point_index[e]
  /// (null: e).
  void setData(const MetadataTable& table, const double* coordinates, int64_t n, int m, const int64_t* point_index);
  /// Shows correlations computed elsewhere (m = coordinates per row).
  void setCorrelations(std::vector<MetadataCorrelation> correlations, int m);
  /// Empties the table.
  void clearData();

  const std::vector<MetadataCorrelation>& correlations() const { return correlations_; }
  /// The metadata column of the current row; "" when none.
  QString currentColumn() const;
  /// Makes `name`'s row current without emitting columnChosen.
  void setCurrentColumn(const QString& name);
  /// The table column of row `row`'s best psi cell, -1 when none.
  int bestColumn(int row) const;
  /// The table column of the atan2 pair (hidden while no row is an angle).
  int pairColumn() const;
  /// The table column of psi_(k+1) (k 0-based), -1 when none.
  int psiColumn(int k) const;
  /// How many psi columns, from psi_1 on, fit the table's width and show;
  /// the rest are hidden (the name cell's tooltip lists every value).
  int shownCoordinates() const;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 Q_SIGNALS:
  /// The user picked the row of metadata column `name` (to colour by it).
  void columnChosen(const QString& name);

 private:
  void fill(int m);
  void fill_row(int row, int m);
  /// Hides the psi columns that do not fit beside the fixed ones (see the .cpp).
  void fit_columns();

  std::vector<MetadataCorrelation> correlations_;
  int coordinates_ = 0;  // psi columns
  bool quiet_ = false;
};

}  // namespace manifold::ui
