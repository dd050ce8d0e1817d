#pragma once
// A dataset as the explorer holds it: core's Dataset plus what the window
// shows about it (facts, how a row becomes an image, per-point values to
// colour by). Built off the GUI thread, then shared read-only.
#include <QString>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "manifold/dataset.h"

namespace manifold::ui {

/// A per-point value the view can colour by.
struct PointMetadata {
  QString name;
  std::vector<float> values;  ///< one per dataset row
  bool categorical = false;   ///< labels: one colour per value
};

struct LoadedDataset {
  Dataset data;
  std::string fingerprint;           ///< Dataset::fingerprint(), keys the graph cache
  std::pair<float, float> range{0, 0};
  QString name;                      ///< shown in the title bar and the dataset panel
  QString path;                      ///< empty for the demo
  QString origin;                    ///< one line about where it came from (demo, file)
  bool demo = false;
  int image_height = 1, image_width = 1;  ///< how a row is drawn as an image
  std::vector<PointMetadata> metadata;

  int64_t rows() const { return data.rows(); }
  /// "70,000 x 28 x 28 (uint8 as float32)".
  QString shapeText() const;
};

/// Reads any dataset the CLI reads. Throws manifold::Error with one line.
std::shared_ptr<const LoadedDataset> loadDataset(const QString& path);

/// Wraps an in-memory dataset (tests, the demo).
std::shared_ptr<const LoadedDataset> adoptDataset(Dataset data, QString name, QString origin, bool demo,
                                                  std::vector<PointMetadata> extra = {});

/// The built-in demo: diffraction patterns of ubiquitin turning about one axis
/// when the simulator is built in, else a generated stack of the same shape
/// (a turning anisotropic spot); `origin` says which.
std::shared_ptr<const LoadedDataset> makeDemoDataset(int count = 1500, int size = 48);

/// Recently opened files (QSettings), newest first.
QStringList recentFiles();
void addRecentFile(const QString& path);

}  // namespace manifold::ui
