#include "manifold/ui/loaded_dataset.h"
#include "manifold/ui/file_check.h"

#include <QFileInfo>
#include <QLocale>
#include <QSettings>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <random>

#include "manifold/error.h"
#include "manifold/parallel.h"
#include "manifold/pdb.h"
#include "manifold/simulate.h"

namespace manifold::ui {
namespace {

// Rows that are not images (feature vectors) are drawn as the most square
// image that holds them, so every dataset can be looked at.
std::pair<int, int> image_geometry(const Dataset& d) {
  const auto& s = d.item_shape;
  if (s.size() >= 2 && s[s.size() - 2] > 0 && s.back() > 0) {
    int64_t h = 1;
    for (size_t i = 0; i + 1 < s.size(); ++i) h *= s[i];
    if (h * s.back() == d.cols()) return {static_cast<int>(h), static_cast<int>(s.back())};
  }
  const int64_t cols = std::max<int64_t>(1, d.cols());
  const auto w = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(cols))));
  return {static_cast<int>((cols + w - 1) / w), static_cast<int>(w)};
}

void add_derived_metadata(LoadedDataset& ds) {
  const Dataset& d = ds.data;
  const int64_t n = d.rows(), cols = d.cols();
  if (!d.labels.empty() && static_cast<int64_t>(d.labels.size()) == n) {
    PointMetadata labels{QObject::tr("label"), {}, true};
    labels.values.assign(d.labels.begin(), d.labels.end());
    ds.metadata.insert(ds.metadata.begin(), std::move(labels));
  }
  PointMetadata mean{QObject::tr("mean intensity"), std::vector<float>(static_cast<size_t>(n)), false};
  parallel_for(0, n, 0, [&](int64_t i) {
    const float* r = d.row(i);
    double s = 0;
    for (int64_t j = 0; j < cols; ++j) s += r[j];
    mean.values[static_cast<size_t>(i)] = static_cast<float>(cols ? s / cols : 0);
  });
  ds.metadata.push_back(std::move(mean));
  PointMetadata index{QObject::tr("index"), std::vector<float>(static_cast<size_t>(n)), false};
  for (int64_t i = 0; i < n; ++i) index.values[static_cast<size_t>(i)] = static_cast<float>(i);
  ds.metadata.push_back(std::move(index));
}

/// The user's metadata found beside `path` (core's discovery): each column
/// also as a PointMetadata the view colours by, unless a column of that
/// name is there already (the reader's own labels, which take the found
/// column's class names when its values are theirs). What cannot be used is
/// said in the dataset's notice, never an error: the images are still good.
void add_user_metadata(LoadedDataset& ds, const std::string& path) {
  std::vector<std::string> warnings;
  MetadataTable found;
  try {
    found = load_metadata({}, ds.rows(), path, &warnings);
  } catch (const Error& e) {
    warnings.push_back(e.what());
  }
  for (const MetadataColumn& c : found.columns()) {
    const QString name = QString::fromStdString(c.name);
    const auto same = std::find_if(ds.metadata.begin(), ds.metadata.end(),
                                   [&](const PointMetadata& m) { return m.name == name; });
    if (same == ds.metadata.end()) {
      ds.metadata.push_back(pointMetadata(c));
      continue;
    }
    // The reader's labels are numbers; the same values found beside the
    // data may come with their classes' names (a class list, Fashion-MNIST's).
    PointMetadata found_column = pointMetadata(c);
    if (same->categorical && same->category_names.empty() && found_column.categorical &&
        found_column.values == same->values)
      same->category_names = std::move(found_column.category_names);
  }
  for (const std::string& w : warnings)
    ds.notice += (ds.notice.isEmpty() ? QString() : QStringLiteral(" ")) + QString::fromStdString(w);
}

/// `data` shown whole, the graph built from its pixels valid under `mask`
/// (empty: from `data` itself, sharing its values).
std::shared_ptr<LoadedDataset> finish(Dataset data, DetectorMask mask = {}) {
  auto ds = std::make_shared<LoadedDataset>();
  ds->data = std::move(data);
  ds->features = masked_features(ds->data, mask);
  ds->mask = std::move(mask);
  ds->fingerprint = ds->features.fingerprint();
  ds->range = ds->data.value_range();
  ds->log_scale = wideDynamicRange(ds->data);
  const auto [h, w] = image_geometry(ds->data);
  ds->image_height = h;
  ds->image_width = w;
  return ds;
}

}  // namespace

namespace {

bool is_single_image(const QFileInfo& info) {
  const QString suffix = info.suffix().toLower();
  return suffix == "png" || suffix == "tif" || suffix == "tiff";
}

}  // namespace

bool wideDynamicRange(const Dataset& data) {
  const int64_t n = data.rows(), d = data.cols();
  if (n == 0 || d == 0) return false;
  // At most about a million values: every step-th pixel of large frames
  // (an odd step, so that it never follows one image column).
  const int64_t rows = std::min<int64_t>(n, 64), step = std::max<int64_t>(1, rows * d >> 20) | 1;
  std::vector<float> all, positive;
  all.reserve(static_cast<size_t>(rows * ((d + step - 1) / step)));
  for (int64_t s = 0; s < rows; ++s) {
    const float* v = data.row(s * n / rows);
    for (int64_t c = 0; c < d; c += step) {
      if (!std::isfinite(v[c])) continue;
      if (v[c] < 0) return false;
      all.push_back(v[c]);
      if (v[c] > 0) positive.push_back(v[c]);
    }
  }
  if (positive.size() < 16) return false;
  auto at = [](std::vector<float>& x, double q) {
    const auto it = x.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(x.size() - 1));
    std::nth_element(x.begin(), it, x.end());
    return *it;
  };
  return at(all, 0.999) >= 30.0f * at(positive, 0.5);
}

QString LoadedDataset::shapeText() const {
  QString shape = QLocale(QLocale::English).toString(static_cast<qlonglong>(data.rows()));
  for (int64_t s : data.item_shape) shape += QStringLiteral(" \u00d7 %1").arg(s);
  if (data.item_shape.empty()) shape += QStringLiteral(" \u00d7 %1").arg(data.cols());
  return shape;
}

QString LoadedDataset::frameText() const {
  QString frame;
  for (int64_t s : data.item_shape)
    frame += (frame.isEmpty() ? QString() : QStringLiteral(" \u00d7 ")) + QString::number(s);
  return frame.isEmpty() ? QString::number(data.cols()) : frame;
}

QString LoadedDataset::usedText() const {
  if (mask.empty()) return {};
  const QLocale en(QLocale::English);
  return QObject::tr("%1 of %2 pixels used")
      .arg(en.toString(static_cast<qlonglong>(features.cols())), en.toString(static_cast<qlonglong>(data.cols())));
}

QString LoadedDataset::itemText() const {
  if (mask.empty())
    return QObject::tr("%1 values").arg(QLocale(QLocale::English).toString(static_cast<qlonglong>(data.cols())));
  return QStringLiteral("%1, %2").arg(frameText(), usedText());
}

QString LoadedDataset::labelText(int64_t row) const {
  if (row < 0 || row >= static_cast<int64_t>(data.labels.size())) return {};
  const int value = data.labels[static_cast<size_t>(row)];
  for (const PointMetadata& m : metadata)
    if (m.name == QObject::tr("label"))
      for (const auto& [code, name] : m.category_names)
        if (code == value) return name;
  return QString::number(value);
}

QString LoadedDataset::maskText() const {
  return mask.empty() ? QString() : QString::fromStdString(mask_summary(mask));
}

std::string LoadedDataset::maskOption() const {
  if (mask.empty()) return "none";
  return std::filesystem::absolute(mask.file).lexically_normal().string();
}

std::shared_ptr<const LoadedDataset> loadDataset(const QString& path, const OpenOptions& options) {
  const QFileInfo info(path);
  if (!info.exists()) throw Error(path.toStdString() + ": no such file or folder");
  checkDatasetInChild(path, options);
  ReadOptions ro;
  ro.hdf5_dataset = options.hdf5_dataset;
  Dataset data = load_dataset(path.toStdString(), ro);
  if (data.rows() < 2 && is_single_image(info)) {
    // One PNG or one-page TIFF is one image of a dataset, not a dataset:
    // the folder of same-sized images it sits in is.
    auto folder = std::const_pointer_cast<LoadedDataset>(loadDataset(info.absolutePath(), options));
    folder->notice = QObject::tr(
                         "%1 is a single image, so its folder %2 was opened (%3 images). "
                         "Use File \u25b8 Open Folder\u2026 to open a folder of images directly.")
                         .arg(info.fileName(), info.absolutePath())
                         .arg(folder->rows());
    return folder;
  }
  if (data.rows() < 2) throw Error(path.toStdString() + ": a dataset needs at least 2 items");
  // As knn and run load (mask.h): the mask fits the frames as read, the
  // transform sees whole frames, the graph only the pixels valid after it.
  DetectorMask mask = mask_for(path.toStdString(), options.mask, data);
  data = transformed(data, options.transform);
  mask = transformed_mask(mask, options.transform);
  auto ds = finish(std::move(data), std::move(mask));
  ds->name = info.fileName();
  ds->path = info.absoluteFilePath();
  ds->hdf5_dataset = options.hdf5_dataset;
  ds->transform = options.transform;
  ds->origin = ds->data.array.empty()
                   ? QObject::tr("%1 file").arg(QString::fromStdString(ds->data.format))
                   : QObject::tr("%1 file, array '%2'")
                         .arg(QString::fromStdString(ds->data.format), QString::fromStdString(ds->data.array));
  if (options.transform != "none")
    ds->origin += QObject::tr(", %1-transformed").arg(QString::fromStdString(options.transform));
  add_derived_metadata(*ds);
  add_user_metadata(*ds, ds->path.toStdString());
  return ds;
}

PointMetadata pointMetadata(const MetadataColumn& c) {
  const int64_t rows = c.rows();
  PointMetadata m{QString::fromStdString(c.name), std::vector<float>(static_cast<size_t>(rows)),
                  c.kind == MetadataKind::Categorical};
  for (int64_t i = 0; i < rows; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (c.kind == MetadataKind::Categorical)
      m.values[k] = c.codes[k] < 0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(c.codes[k]);
    else
      m.values[k] = static_cast<float>(c.values[k]);
  }
  if (c.kind == MetadataKind::Angle) m.period = c.unit == AngleUnit::Degrees ? 360.0 : 2 * M_PI;
  for (size_t code = 0; code < c.categories.size(); ++code)
    m.category_names.emplace_back(static_cast<int>(code), QString::fromStdString(c.categories[code]));
  return m;
}

MetadataTable metadataTable(const std::vector<PointMetadata>& metadata, int64_t rows) {
  MetadataTable table(rows);
  for (const PointMetadata& m : metadata) {
    if (static_cast<int64_t>(m.values.size()) != rows) continue;
    MetadataColumn c;
    c.name = m.name.toStdString();
    c.source = "explorer";
    if (m.categorical) {
      c.kind = MetadataKind::Categorical;
      std::map<int, int32_t> code_of;  // value -> code, in value order
      for (float v : m.values)
        if (std::isfinite(v)) code_of.emplace(static_cast<int>(v), 0);
      for (auto& [value, code] : code_of) {
        code = static_cast<int32_t>(c.categories.size());
        QString name = QString::number(value);
        for (const auto& [v, text] : m.category_names)
          if (v == value) name = text;
        c.categories.push_back(name.toStdString());
      }
      for (float v : m.values) c.codes.push_back(std::isfinite(v) ? code_of[static_cast<int>(v)] : -1);
    } else {
      c.kind = m.period > 0 ? MetadataKind::Angle : MetadataKind::Numeric;
      c.unit = m.period == 360.0 ? AngleUnit::Degrees : AngleUnit::Radians;
      c.values.assign(m.values.begin(), m.values.end());
    }
    table.add(std::move(c));
  }
  return table;
}

std::shared_ptr<const LoadedDataset> adoptDataset(Dataset data, QString name, QString origin, bool demo,
                                                  std::vector<PointMetadata> extra, DetectorMask mask) {
  auto ds = finish(std::move(data), std::move(mask));
  ds->name = std::move(name);
  ds->origin = std::move(origin);
  ds->demo = demo;
  ds->metadata = std::move(extra);
  add_derived_metadata(*ds);
  return ds;
}

namespace {

// Used only where the PDB file of the real demo is missing: an elongated spot
// turning through 180 degrees (a full turn of its symmetric pattern), with
// noise, so the stack lies on a circle as the diffraction set does.
std::shared_ptr<const LoadedDataset> generated_demo(const QString& why) {
  const int count = 1500, size = 32;
  std::vector<float> v(static_cast<size_t>(count) * size * size);
  std::vector<float> angle(static_cast<size_t>(count));
  const double c0 = (size - 1) / 2.0, sa = size / 4.0, sb = size / 11.0;
  parallel_for(0, count, 0, [&](int64_t i) {
    std::mt19937 rng(static_cast<uint32_t>(1234 + i));
    std::normal_distribution<float> noise(0.f, 0.03f);
    const double a = M_PI * static_cast<double>(i) / count;
    angle[static_cast<size_t>(i)] = static_cast<float>(a * 360.0 / M_PI);
    const double c = std::cos(a), s = std::sin(a);
    float* img = v.data() + static_cast<size_t>(i) * size * size;
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x) {
        const double dx = x - c0, dy = y - c0;
        const double u = c * dx + s * dy, t = -s * dx + c * dy;
        img[y * size + x] = static_cast<float>(std::exp(-0.5 * (u * u / (sa * sa) + t * t / (sb * sb)))) + noise(rng);
      }
  });
  Dataset data(count, static_cast<int64_t>(size) * size, std::move(v));
  data.source = "demo";
  data.format = "generated";
  data.source_dtype = "float32";
  data.item_shape = {size, size};
  std::vector<PointMetadata> extra;
  extra.push_back({QObject::tr("rotation angle (deg)"), std::move(angle), false, 360.0});
  return adoptDataset(std::move(data), QObject::tr("Demo (generated)"),
                      QObject::tr("generated demo: a spot turning through a full cycle (%1)").arg(why), true,
                      std::move(extra));
}

}  // namespace

std::shared_ptr<const LoadedDataset> makeDemoDataset() {
  std::string pdb;
  try {
    pdb = find_packaged_pdb("1ubq");
  } catch (const Error& e) {
    return generated_demo(QString::fromStdString(e.what()));
  }
  // The parameters of `manifold run --demo`, so the GUI and the CLI show the same data.
  DiffractionParams sp;
  sp.count = 2000;
  sp.size = 32;
  sp.axis = "x";
  sp.photons = 1e5;
  sp.seed = 1;
  const Molecule molecule = read_pdb(pdb);
  Progress quiet;
  DiffractionImages d = simulate_diffraction(molecule, sp, quiet);
  std::vector<float> v = d.images;
  anscombe_transform(v.data(), static_cast<int64_t>(v.size()));
  Dataset data(d.count, static_cast<int64_t>(d.size) * d.size, std::move(v));
  data.source = "demo";
  data.format = "simulated";
  data.source_dtype = "float32";
  data.item_shape = {d.size, d.size};
  std::vector<PointMetadata> extra;
  PointMetadata angle{QObject::tr("rotation angle (deg)"), {}, false, 360.0};
  for (double a : d.angles) angle.values.push_back(static_cast<float>(a * 180.0 / M_PI));
  extra.push_back(std::move(angle));
  auto ds = std::const_pointer_cast<LoadedDataset>(adoptDataset(
      std::move(data), QObject::tr("Demo: ubiquitin diffraction"),
      QObject::tr("%1 simulated diffraction patterns of ubiquitin (1UBQ, %2 atoms) turning about the x axis, "
                  "%3 photons per pattern, Anscombe-transformed; the embedding should trace a circle")
          .arg(d.count)
          .arg(molecule.atoms.size())
          .arg(sp.photons, 0, 'g', 3),
      true, std::move(extra)));
  ds->transform = "anscombe";
  RunParameters p;
  p.knn.k = 20;
  p.diffusion.k = 20;
  p.diffusion.components = 4;
  ds->suggested = p;
  return ds;
}

QStringList recentFiles() {
  QSettings settings;
  return settings.value(QStringLiteral("recentFiles")).toStringList();
}

void addRecentFile(const QString& path) {
  QSettings settings;
  QStringList files = settings.value(QStringLiteral("recentFiles")).toStringList();
  files.removeAll(path);
  files.prepend(path);
  while (files.size() > 10) files.removeLast();
  settings.setValue(QStringLiteral("recentFiles"), files);
}

}  // namespace manifold::ui
