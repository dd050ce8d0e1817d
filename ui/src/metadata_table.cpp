// The metadata correlation table (see metadata_table.h).
#include "manifold/ui/metadata_table.h"

#include <QBrush>
#include <QFont>
#include <QHeaderView>
#include <QResizeEvent>

#include <algorithm>
#include <cmath>
#include <limits>

namespace manifold::ui {

namespace {

// Columns: name, statistic, the atan2 pair, then psi_1..psi_m. What a row
// says first (which column, by which statistic, the angle's pair) comes
// first, so the psi columns that do not fit a narrow dock are the ones left
// off (fit_columns), never the pair.
constexpr int kNameColumn = 0, kStatisticColumn = 1, kPairColumn = 2, kFixedColumns = 3;
const QColor kBestTint(255, 236, 160);
// The name keeps at least this many characters' room before psi columns are
// left off.
constexpr int kNameMinChars = 10;

QString psiName(int k) { return QStringLiteral("ψ%1").arg(k + 1); }

// The statistic's symbol: the kind of the column in one letter.
QString statisticSymbol(const MetadataCorrelation& r) {
  switch (r.kind) {
    case MetadataKind::Numeric: return QStringLiteral("r");
    case MetadataKind::Categorical: return QStringLiteral("η");
    case MetadataKind::Angle: return QStringLiteral("R");
  }
  return {};
}

QString kindText(const MetadataCorrelation& r) {
  switch (r.kind) {
    case MetadataKind::Numeric: return QStringLiteral("numeric");
    case MetadataKind::Categorical: return QStringLiteral("categorical");
    case MetadataKind::Angle: return QStringLiteral("angle");
  }
  return {};
}

QString statisticTip(const MetadataCorrelation& r) {
  switch (r.kind) {
    case MetadataKind::Numeric: return QStringLiteral("Pearson's r of %1 with ψk");
    case MetadataKind::Categorical:
      return QStringLiteral(
          "Correlation ratio η of ψk grouped by %1: 0 no relation, 1 ψk constant within each category");
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

// Two decimals without the leading zero (".98", "-.53", "1.00"), as
// statistics tables print correlations: four characters for any value.
QString compactNumber(double v) {
  if (std::isnan(v)) return QStringLiteral("–");
  QString text = QString::number(v, 'f', 2);
  if (text.startsWith(QStringLiteral("0."))) text.remove(0, 1);
  if (text.startsWith(QStringLiteral("-0."))) text.remove(1, 1);
  return text == QStringLiteral("-.00") ? QStringLiteral(".00") : text;
}

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
  setTextElideMode(Qt::ElideRight);
  setWordWrap(false);
  verticalHeader()->setVisible(false);
  // The name takes the room the numbers leave (elided when short of it);
  // the numbers are as wide as their text. Columns that do not fit are left
  // off (fit_columns); a horizontal scroll bar is the last resort.
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  horizontalHeader()->setStretchLastSection(false);
  horizontalHeader()->setMinimumSectionSize(fontMetrics().horizontalAdvance(QStringLiteral("-.00")) + 8);
  setToolTip(
      tr("Correlation of each metadata column with each diffusion coordinate; the best is highlighted. "
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

int MetadataTableWidget::psiColumn(int k) const { return k >= 0 && k < coordinates_ ? kFixedColumns + k : -1; }

int MetadataTableWidget::pairColumn() const { return kPairColumn; }

int MetadataTableWidget::shownCoordinates() const {
  int shown = 0;
  while (shown < coordinates_ && !isColumnHidden(kFixedColumns + shown)) ++shown;
  return shown;
}

void MetadataTableWidget::fill(int m) {
  const QString current = currentColumn();
  quiet_ = true;
  clear();
  coordinates_ = m;
  setColumnCount(kFixedColumns + m);
  QStringList headers = {tr("Column"), QString(), tr("atan2")};
  for (int k = 0; k < m; ++k) headers << psiName(k);
  setHorizontalHeaderLabels(headers);
  horizontalHeader()->setSectionResizeMode(kNameColumn, QHeaderView::Stretch);
  horizontalHeaderItem(kStatisticColumn)
      ->setToolTip(tr("The statistic of each row: r, Pearson's r (numbers); η, the correlation ratio "
                      "(categories); R, the circular-linear correlation (angles)"));
  horizontalHeaderItem(kPairColumn)
      ->setToolTip(tr("Angles only: the Fisher-Lee circular correlation of the angle with atan2(ψj, ψi) of the "
                      "standardised pair that follows it best (×2: with twice the angle)"));
  setRowCount(static_cast<int>(correlations_.size()));
  for (int row = 0; row < rowCount(); ++row) fill_row(row, m);
  setCurrentColumn(current);
  quiet_ = false;
  fit_columns();
}

void MetadataTableWidget::fill_row(int row, int m) {
  const MetadataCorrelation& r = correlations_[static_cast<size_t>(row)];
  const QString name = QString::fromStdString(r.name);
  // Every value in full, for the cells left off a narrow table and the
  // three decimals the cells round away.
  QStringList values;
  for (int k = 0; k < m && k < static_cast<int>(r.per_coordinate.size()); ++k)
    values << QStringLiteral("%1 %2").arg(psiName(k), number(r.per_coordinate[static_cast<size_t>(k)]));
  setItem(row, kNameColumn,
          cell(name, tr("%1 (%2): %3 points with a value\n%4 with ψ1…ψ%5: %6")
                         .arg(name, kindText(r))
                         .arg(r.rows_used)
                         .arg(statisticSymbol(r))
                         .arg(m)
                         .arg(values.join(QStringLiteral(", ")))));
  auto* statistic = cell(statisticSymbol(r), statisticTip(r).arg(name));
  statistic->setTextAlignment(Qt::AlignCenter);
  setItem(row, kStatisticColumn, statistic);
  for (int k = 0; k < m; ++k) {
    const double v = k < static_cast<int>(r.per_coordinate.size()) ? r.per_coordinate[static_cast<size_t>(k)]
                                                                   : std::nan("");
    auto* c = cell(compactNumber(v), QStringLiteral("%1 with %2: %3").arg(name, psiName(k), number(v)));
    c->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    setItem(row, kFixedColumns + k, c);
  }
  if (r.best >= 0 && r.best < m) highlight(item(row, kFixedColumns + r.best));
  if (r.pair_i < 0) {
    setItem(row, kPairColumn, cell(QString()));
    return;
  }
  auto* pair = cell(QStringLiteral("%1 %2,%3%4")
                        .arg(compactNumber(r.pair_fisher_lee), psiName(r.pair_i), psiName(r.pair_j),
                             r.pair_harmonic == 2 ? QStringLiteral(" ×2") : QString()),
                    tr("Fisher-Lee circular correlation of %1 with atan2(%2, %3): %4")
                        .arg(r.pair_harmonic == 2 ? tr("twice %1").arg(name) : name, psiName(r.pair_j),
                             psiName(r.pair_i), number(r.pair_fisher_lee)));
  // The pair is an angle's headline (does the angle go round with atan2?);
  // R of one coordinate can be as high for a ring.
  highlight(pair);
  setItem(row, kPairColumn, pair);
}

void MetadataTableWidget::resizeEvent(QResizeEvent* event) {
  QTableWidget::resizeEvent(event);
  fit_columns();
}

void MetadataTableWidget::fit_columns() {
  // Shows psi columns from psi1 on while they fit beside the fixed columns
  // and a name of kNameMinChars characters; one psi column always shows.
  const int available = viewport()->width();
  const int name_room = fontMetrics().averageCharWidth() * kNameMinChars + 8;
  int used = name_room;
  for (int c = kStatisticColumn; c < kFixedColumns; ++c)
    if (c != kPairColumn || std::any_of(correlations_.begin(), correlations_.end(),
                                        [](const MetadataCorrelation& r) { return r.pair_i >= 0; }))
      used += std::max(sizeHintForColumn(c), horizontalHeader()->sectionSizeHint(c));
  int shown = 0;
  for (int k = 0; k < coordinates_; ++k) {
    const int c = kFixedColumns + k;
    used += std::max({sizeHintForColumn(c), horizontalHeader()->sectionSizeHint(c),
                      horizontalHeader()->minimumSectionSize()});
    if (k > 0 && used > available) break;
    ++shown;
  }
  for (int k = 0; k < coordinates_; ++k) setColumnHidden(kFixedColumns + k, k >= shown);
  // The pair column says something only for angles.
  setColumnHidden(kPairColumn, std::none_of(correlations_.begin(), correlations_.end(),
                                            [](const MetadataCorrelation& r) { return r.pair_i >= 0; }));
  if (shown < coordinates_ && shown > 0)
    horizontalHeaderItem(kFixedColumns + shown - 1)
        ->setToolTip(tr("ψ%1–ψ%2 do not fit: widen the dock to see them (each row's name lists every value)")
                         .arg(shown + 1)
                         .arg(coordinates_));
  else if (shown > 0)
    horizontalHeaderItem(kFixedColumns + shown - 1)->setToolTip(QString());
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
      scrollToItem(item(row, 0));
    }
  quiet_ = was;
}

int MetadataTableWidget::bestColumn(int row) const {
  if (row < 0 || row >= static_cast<int>(correlations_.size())) return -1;
  const int best = correlations_[static_cast<size_t>(row)].best;
  return best < 0 ? -1 : kFixedColumns + best;
}

}  // namespace manifold::ui
