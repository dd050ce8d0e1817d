// The metadata correlation table (see metadata_table.h).
#include "manifold/ui/metadata_table.h"

#include <QBrush>
#include <QFont>
#include <QHeaderView>
#include <cmath>
#include <limits>

namespace manifold::ui {

namespace {

constexpr int kFixedColumns = 2;  // name, kind; then psi_1..psi_m, then the pair
const QColor kBestTint(255, 236, 160);

QString psiName(int k) { return QStringLiteral("ψ%1").arg(k + 1); }

QString kindText(const MetadataCorrelation& r) {
  switch (r.kind) {
    case MetadataKind::Numeric: return QStringLiteral("numeric (r)");
    case MetadataKind::Categorical: return QStringLiteral("categorical (η)");
    case MetadataKind::Angle: return QStringLiteral("angle (R)");
  }
  return {};
}

QString statisticTip(const MetadataCorrelation& r) {
  switch (r.kind) {
    case MetadataKind::Numeric: return QStringLiteral("Pearson's r of %1 with ψk");
    case MetadataKind::Categorical:
      return QStringLiteral("Correlation ratio η of ψk grouped by %1: 0 no relation, 1 ψk constant within each category");
    case MetadataKind::Angle: return QStringLiteral("Circular-linear correlation R (Mardia) of %1 with ψk, 0 to 1");
  }
  return {};
}

QTableWidgetItem* cell(const QString& text, const QString& tip = {}) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
  if (!tip.isEmpty()) item->setToolTip(tip);
  return item;
}

QString number(double v) { return std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'f', 3); }

void highlight(QTableWidgetItem* item) {
  QFont f = item->font();
  f.setBold(true);
  item->setFont(f);
  item->setBackground(QBrush(kBestTint));
}

}  // namespace

std::vector<float> metadataValues(const MetadataColumn& column, const std::vector<int64_t>& point_index) {
  std::vector<float> out;
  out.reserve(point_index.size());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t row : point_index) {
    if (row < 0 || row >= column.rows()) {
      out.push_back(nan);
    } else if (column.kind == MetadataKind::Categorical) {
      const int32_t c = column.codes[static_cast<size_t>(row)];
      out.push_back(c < 0 ? nan : static_cast<float>(c));
    } else {
      out.push_back(static_cast<float>(column.kind == MetadataKind::Angle ? column.radians(row)
                                                                          : column.values[static_cast<size_t>(row)]));
    }
  }
  return out;
}

MetadataTableWidget::MetadataTableWidget(QWidget* parent) : QTableWidget(parent) {
  setObjectName(QStringLiteral("metadataTable"));
  setSelectionBehavior(QAbstractItemView::SelectRows);
  setSelectionMode(QAbstractItemView::SingleSelection);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  verticalHeader()->setVisible(false);
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  setToolTip(tr("Correlation of each metadata column with each diffusion coordinate; the best is highlighted. "
                "Click a row to colour the points by it."));
  connect(this, &QTableWidget::cellClicked, this, [this](int row, int) {
    if (!quiet_ && row >= 0 && row < static_cast<int>(correlations_.size()))
      Q_EMIT columnChosen(QString::fromStdString(correlations_[static_cast<size_t>(row)].name));
  });
  fill(0);
}

void MetadataTableWidget::setData(const MetadataTable& table, const double* coordinates, int64_t n, int m,
                                  const int64_t* point_index) {
  setCorrelations(correlate_metadata(table, coordinates, n, m, point_index), m);
}

void MetadataTableWidget::setCorrelations(std::vector<MetadataCorrelation> correlations, int m) {
  correlations_ = std::move(correlations);
  fill(m);
}

void MetadataTableWidget::clearData() {
  correlations_.clear();
  fill(0);
}

void MetadataTableWidget::fill(int m) {
  const QString current = currentColumn();
  quiet_ = true;
  clear();
  setColumnCount(kFixedColumns + m + 1);
  QStringList headers = {tr("Column"), tr("Kind")};
  for (int k = 0; k < m; ++k) headers << psiName(k);
  headers << tr("atan2 pair");
  setHorizontalHeaderLabels(headers);
  horizontalHeaderItem(pairColumn())
      ->setToolTip(tr("Angles only: the Fisher-Lee circular correlation of the angle with atan2(ψj, ψi) of the "
                      "standardised pair that follows it best (×2: with twice the angle)"));
  setRowCount(static_cast<int>(correlations_.size()));
  for (int row = 0; row < rowCount(); ++row) {
    const MetadataCorrelation& r = correlations_[static_cast<size_t>(row)];
    const QString name = QString::fromStdString(r.name);
    setItem(row, 0, cell(name, tr("%1 points with a value").arg(r.rows_used)));
    setItem(row, 1, cell(kindText(r), statisticTip(r).arg(name)));
    for (int k = 0; k < m; ++k) {
      const double v = k < static_cast<int>(r.per_coordinate.size()) ? r.per_coordinate[static_cast<size_t>(k)]
                                                                       : std::nan("");
      setItem(row, kFixedColumns + k, cell(number(v)));
    }
    if (r.best >= 0 && r.best < m) highlight(item(row, kFixedColumns + r.best));
    if (r.pair_i >= 0) {
      auto* pair = cell(QStringLiteral("%1 (%2, %3)%4")
                            .arg(number(r.pair_fisher_lee), psiName(r.pair_i), psiName(r.pair_j),
                                 r.pair_harmonic == 2 ? QStringLiteral(" ×2") : QString()),
                        tr("Fisher-Lee circular correlation of %1 with atan2(%2, %3)")
                            .arg(r.pair_harmonic == 2 ? tr("twice %1").arg(name) : name, psiName(r.pair_j),
                                 psiName(r.pair_i)));
      // The pair is an angle's headline (does the angle go round with
      // atan2?); R of one coordinate can be as high for a ring.
      highlight(pair);
      setItem(row, pairColumn(), pair);
    } else {
      setItem(row, pairColumn(), cell(QString()));
    }
  }
  setCurrentColumn(current);
  quiet_ = false;
}

QString MetadataTableWidget::currentColumn() const {
  const int row = currentRow();
  if (row < 0 || row >= static_cast<int>(correlations_.size())) return {};
  return QString::fromStdString(correlations_[static_cast<size_t>(row)].name);
}

void MetadataTableWidget::setCurrentColumn(const QString& name) {
  const bool was = quiet_;
  quiet_ = true;
  for (int row = 0; row < static_cast<int>(correlations_.size()); ++row)
    if (QString::fromStdString(correlations_[static_cast<size_t>(row)].name) == name) {
      selectRow(row);
      setCurrentCell(row, 0);
    }
  quiet_ = was;
}

int MetadataTableWidget::bestColumn(int row) const {
  if (row < 0 || row >= static_cast<int>(correlations_.size())) return -1;
  const int best = correlations_[static_cast<size_t>(row)].best;
  return best < 0 ? -1 : kFixedColumns + best;
}

}  // namespace manifold::ui
