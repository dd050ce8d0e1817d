// The main window's selection panel below the strip (what is in the
// selection: a per-category breakdown and the mean image) and the gallery's
// sort order.
#include <QBoxLayout>
#include <QHeaderView>
#include <QLocale>
#include <QPixmap>
#include <QtConcurrent/QtConcurrent>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "manifold/ui/main_window.h"
#include "manifold/ui/palette.h"

namespace manifold::ui {
namespace {

// Up to this many images are averaged on the GUI thread (a fraction of a
// frame); more go to a worker so a selection of every image never blocks.
constexpr size_t kInlineMeanRows = 2000;

// The mean of `rows` of `data`, or empty when `cancel` is set midway.
std::vector<float> mean_of_rows(const Dataset& data, const std::vector<int64_t>& rows,
                                const std::atomic<bool>* cancel) {
  const int64_t d = data.cols();
  std::vector<double> sum(static_cast<size_t>(d), 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (cancel && (i & 1023) == 0 && cancel->load(std::memory_order_relaxed)) return {};
    const float* row = data.row(rows[i]);
    for (int64_t j = 0; j < d; ++j) sum[static_cast<size_t>(j)] += row[j];
  }
  std::vector<float> mean(sum.size());
  const double n = static_cast<double>(std::max<size_t>(rows.size(), 1));
  for (size_t j = 0; j < sum.size(); ++j) mean[j] = static_cast<float>(sum[j] / n);
  return mean;
}

// Values stretched linearly from their minimum (black) to their maximum (white).
QImage grey_image(const std::vector<float>& values, int height, int width) {
  QImage image(width, height, QImage::Format_Grayscale8);
  if (values.size() != static_cast<size_t>(height) * static_cast<size_t>(width)) return {};
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const float span = *hi > *lo ? *hi - *lo : 1.f;
  for (int y = 0; y < height; ++y) {
    uchar* line = image.scanLine(y);
    for (int x = 0; x < width; ++x)
      line[x] = static_cast<uchar>(std::lround(255.f * (values[static_cast<size_t>(y) * width + x] - *lo) / span));
  }
  return image;
}

}  // namespace

void MainWindow::build_selection_summary(QWidget* parent, QBoxLayout* layout) {
  breakdown_title_ = new QLabel(parent);
  breakdown_title_->setWordWrap(true);
  layout->addWidget(breakdown_title_);
  auto* row = new QHBoxLayout;
  breakdown_ = new QTableWidget(0, 3, parent);
  breakdown_->setHorizontalHeaderLabels({tr("Category"), tr("Count"), tr("%")});
  breakdown_->verticalHeader()->hide();
  breakdown_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  breakdown_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  breakdown_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
  breakdown_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  breakdown_->setSelectionMode(QAbstractItemView::NoSelection);
  breakdown_->setMaximumHeight(160);
  row->addWidget(breakdown_, 1);
  mean_image_ = new QLabel(parent);
  mean_image_->setFixedSize(96, 96);
  mean_image_->setAlignment(Qt::AlignCenter);
  mean_image_->setToolTip(tr("The mean image of the selection"));
  row->addWidget(mean_image_);
  layout->addLayout(row);
  connect(&mean_watcher_, &QFutureWatcher<std::vector<float>>::finished, this, [this] {
    // The mean of a selection since replaced is dropped: its flag was set
    // (or let go for a mean computed inline) when the selection changed.
    if (!mean_cancel_ || mean_cancel_->load()) return;
    std::vector<float> mean = mean_watcher_.result();
    if (!mean.empty()) show_selection_mean(std::move(mean));
  });
  update_selection_summary();
}

QString MainWindow::breakdownColumn() const {
  if (!dataset_) return {};
  for (const PointMetadata& meta : dataset_->metadata)
    if (meta.categorical && meta.name == colour_key_) return meta.name;
  for (const PointMetadata& meta : dataset_->metadata)
    if (meta.categorical) return meta.name;
  return {};
}

void MainWindow::update_selection_summary() {
  update_breakdown();
  start_selection_mean();
}

void MainWindow::update_breakdown() {
  breakdown_->setRowCount(0);
  const QString column = breakdownColumn();
  const PointMetadata* meta = nullptr;
  if (dataset_)
    for (const PointMetadata& m : dataset_->metadata)
      if (m.name == column) meta = &m;
  const bool shown = meta && !selected_rows_.empty();
  breakdown_->setVisible(shown);
  breakdown_title_->setVisible(shown);
  if (!shown) return;
  breakdown_title_->setText(tr("By %1:").arg(column));
  // Counted per value; a missing value (NaN) is a category of its own, last.
  std::map<int, int64_t> counts;
  int64_t missing = 0;
  for (int64_t r : selected_rows_) {
    const float v = meta->values[static_cast<size_t>(r)];
    if (std::isnan(v)) ++missing;
    else
      ++counts[static_cast<int>(std::lround(v))];
  }
  std::vector<std::pair<int64_t, int>> by_count;  // most frequent first, ties by value
  for (const auto& [value, count] : counts) by_count.emplace_back(-count, value);
  std::sort(by_count.begin(), by_count.end());
  const QLocale en(QLocale::English);
  const double total = static_cast<double>(selected_rows_.size());
  auto add_row = [&](const QString& name, QColor colour, int64_t count) {
    const int r = breakdown_->rowCount();
    breakdown_->insertRow(r);
    QPixmap swatch(12, 12);
    swatch.fill(colour);
    breakdown_->setItem(r, 0, new QTableWidgetItem(QIcon(swatch), name));
    auto* n = new QTableWidgetItem(en.toString(static_cast<qlonglong>(count)));
    n->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    breakdown_->setItem(r, 1, n);
    auto* p = new QTableWidgetItem(QString::number(100.0 * static_cast<double>(count) / total, 'f', 1));
    p->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    breakdown_->setItem(r, 2, p);
  };
  for (const auto& [negative_count, value] : by_count) {
    QString name = QString::number(value);
    for (const auto& [v, n] : meta->category_names)
      if (v == value) name = n;
    add_row(name, categoryColour(value), -negative_count);
  }
  if (missing > 0) add_row(tr("(no value)"), QColor(Qt::lightGray), missing);
}

void MainWindow::start_selection_mean() {
  if (mean_cancel_) mean_cancel_->store(true);
  mean_cancel_.reset();
  selection_mean_.clear();
  mean_image_->clear();
  mean_image_->setVisible(dataset_ && !selected_rows_.empty());
  if (!dataset_ || selected_rows_.empty()) return;
  if (selected_rows_.size() <= kInlineMeanRows) {
    show_selection_mean(mean_of_rows(dataset_->data, selected_rows_, nullptr));
    return;
  }
  mean_image_->setText(tr("averaging\u2026"));
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  mean_cancel_ = cancel;
  // The worker holds the dataset and its own copy of the rows: the window may
  // open another dataset or change the selection meanwhile.
  mean_watcher_.setFuture(QtConcurrent::run([ds = dataset_, rows = selected_rows_, cancel] {
    return mean_of_rows(ds->data, rows, cancel.get());
  }));
}

void MainWindow::show_selection_mean(std::vector<float> mean) {
  selection_mean_ = std::move(mean);
  const QImage image = grey_image(selection_mean_, dataset_->image_height, dataset_->image_width);
  if (!image.isNull())
    mean_image_->setPixmap(QPixmap::fromImage(image.scaled(mean_image_->size(), Qt::KeepAspectRatio,
                                                           image.width() < mean_image_->width()
                                                               ? Qt::FastTransformation
                                                               : Qt::SmoothTransformation)));
  else
    mean_image_->setText(tr("(not an image)"));
  Q_EMIT selectionMeanReady();
}

void MainWindow::update_sort_choices() {
  QList<QPair<QString, QString>> choices;
  const int m = outcome_ ? outcome_->result->m : 0;
  for (int c = 1; c <= m; ++c) choices.append({QStringLiteral("\u03c8%1").arg(c), QStringLiteral("dc%1").arg(c)});
  if (dataset_)
    for (const PointMetadata& meta : dataset_->metadata) choices.append({meta.name, meta.name});
  dataset_panel_->setSortChoices(choices);
  // A kept sort is redone: a new embedding moves every ψ. Dataset order is
  // left alone (the gallery keeps its scroll position) unless a sort no
  // longer offered has to be undone.
  if (!dataset_panel_->sortKey().isEmpty()) sort_gallery(dataset_panel_->sortKey());
  else if (!dataset_panel_->model()->rows().empty())
    dataset_panel_->setOrder({});
}

void MainWindow::sort_gallery(const QString& key) {
  if (!dataset_ || key.isEmpty()) {
    dataset_panel_->setOrder({});
    return;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> value(static_cast<size_t>(dataset_->rows()), nan);
  if (key.startsWith(QStringLiteral("dc"))) {
    const int c = key.mid(2).toInt();
    if (outcome_ && c >= 1 && c <= outcome_->result->m) {
      const DiffusionResult& r = *outcome_->result;
      for (int64_t e = 0; e < r.n; ++e)
        value[static_cast<size_t>(r.point_index[static_cast<size_t>(e)])] = r.coordinates[e * r.m + c - 1];
    }
  } else {
    for (const PointMetadata& meta : dataset_->metadata)
      if (meta.name == key)
        for (size_t row = 0; row < value.size(); ++row) value[row] = meta.values[row];
    // Images outside the embedding go last under any order.
    if (outcome_)
      for (size_t row = 0; row < value.size(); ++row)
        if (embedded_index(static_cast<int64_t>(row)) < 0) value[row] = nan;
  }
  dataset_panel_->setOrder(rowsSortedBy(value));
}

}  // namespace manifold::ui
