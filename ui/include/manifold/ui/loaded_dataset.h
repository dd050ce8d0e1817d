#pragma once
// A dataset as the explorer holds it: core's Dataset plus what the window
// shows about it (facts, how a row becomes an image, per-point values to
// colour by). Built off the GUI thread, then shared read-only.
#include <QString>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "manifold/dataset.h"
#include "manifold/mask.h"
#include "manifold/metadata.h"
#include "manifold/ui/run_parameters.h"

namespace manifold::ui {

/// A per-point value the view can colour by.
struct PointMetadata {
  QString name;
  std::vector<float> values;  ///< one per dataset row (NaN: missing)
  bool categorical = false;   ///< labels: one colour per value
  /// Angles: the value of one turn (360 for degrees, 2 pi for radians),
  /// coloured by a cyclic map; 0 for values that do not wrap.
  double period = 0;
  /// Categorical: the name of each value, for the legend (else the number).
  std::vector<std::pair<int, QString>> category_names = {};
};

struct LoadedDataset {
  Dataset data;  ///< the full frames: images, hover, trajectories
  /// What the k-NN graph is built from: the pixels of `data` valid under
  /// `mask` (core's masked_features, as knn and run build it). With no mask
  /// it shares `data`'s values (no copy).
  Dataset features;
  DetectorMask mask;        ///< after the transform; empty = every pixel
  std::string fingerprint;  ///< features.fingerprint(), keys the graph cache
  std::pair<float, float> range{0, 0};
  /// Images are first drawn on a logarithmic scale: non-negative values
  /// spanning well over a decade, as photon counts of diffraction patterns
  /// do (wideDynamicRange); the gallery's Log scale box still decides.
  bool log_scale = false;
  QString name;                    ///< shown in the title bar and the dataset panel
  QString path;                    ///< empty for data made in memory (demo, selection)
  std::string hdf5_dataset;        ///< HDF5/CXI dataset path it was read from ("" = default)
  std::string transform = "none";  ///< none | anscombe, applied after reading
  QString origin;                  ///< one line about where it came from (demo, file)
  QString notice;                  ///< said once when it opens (what was opened instead of what was asked)
  bool demo = false;
  int image_height = 1, image_width = 1;  ///< how a row is drawn as an image
  /// What colours points: the reader's labels, the user's columns found
  /// beside the file (NAME.labels.npy, NAME.angles.npy, NAME.csv, MNIST
  /// labels, CXI sample datasets: core's metadata.h), mean intensity, index.
  std::vector<PointMetadata> metadata;
  /// Parameters that suit this data (the demo's are those of `manifold run --demo`).
  std::optional<RunParameters> suggested;

  int64_t rows() const { return data.rows(); }
  /// "70,000 x 28 x 28 (uint8 as float32)".
  QString shapeText() const;
  /// One item's frame: "28 \u00d7 28", or its value count when it has no shape.
  QString frameText() const;
  /// With a mask, the pixels the distances use: "528 of 784 pixels used";
  /// "" without one.
  QString usedText() const;
  /// What one item is to the distances: "784 values" without a mask, else
  /// the frame and the pixels used, "28 \u00d7 28, 528 of 784 pixels used"
  /// (the frame size alone would overstate what the graph compares).
  QString itemText() const;
  /// core's mask_summary ("mask: 2,096 of 2,304 pixels valid (91.0%) from
  /// FILE"), or "" without a mask.
  QString maskText() const;
  /// The reader's label of `row`: its class name where the "label" column
  /// names it (a class list, Fashion-MNIST's), else the number; "" without
  /// labels.
  QString labelText(int64_t row) const;
  /// What a session records as its mask so `run --session` builds the same
  /// graph: the file read, or "none".
  std::string maskOption() const;
};

/// True when `data`'s values are non-negative and the brightest (the 99.9th
/// percentile over up to 64 rows spread over the stack) reach 30 times the
/// median of the positive ones: diffraction patterns' central speckle then
/// leaves the rest of a linear image black. Natural images, class images
/// (Fashion-MNIST) and zero-mean data stay linear.
bool wideDynamicRange(const Dataset& data);

struct OpenOptions {
  std::string hdf5_dataset;        ///< "" = the reader's default
  std::string transform = "none";  ///< none | anscombe (2 sqrt(x + 3/8), for photon counts)
  std::string mask;                ///< as run --mask: a file, "none", or "" = the mask found with the data
};

/// Reads any dataset the CLI reads, with the detector mask knn and run would
/// use (core's mask_for: `options.mask`, else the one found in or beside the
/// file). Throws manifold::Error with one line (a bad mask: the CLI's line).
std::shared_ptr<const LoadedDataset> loadDataset(const QString& path, const OpenOptions& options = {});

/// A column of core's metadata table as the view colours by it (categories
/// by their codes, named; angles with their period).
PointMetadata pointMetadata(const MetadataColumn& column);

/// The columns of `metadata` (of `rows` values each; others are left out)
/// as core's metadata table, for their correlation with the coordinates.
MetadataTable metadataTable(const std::vector<PointMetadata>& metadata, int64_t rows);

/// Wraps an in-memory dataset (tests, the demo, a selection: with the mask of
/// the dataset it came from, which fits its frames).
std::shared_ptr<const LoadedDataset> adoptDataset(Dataset data, QString name, QString origin, bool demo,
                                                  std::vector<PointMetadata> extra = {}, DetectorMask mask = {});

/// The built-in demo, the data of `manifold run --demo`: diffraction patterns
/// of ubiquitin (1UBQ, from Debian's freesasa package) turning about one axis,
/// with Poisson noise, Anscombe-transformed. Where the PDB file is missing it
/// falls back to a generated stack that also lies on a circle, and `origin`
/// says so.
std::shared_ptr<const LoadedDataset> makeDemoDataset();

/// Recently opened files (QSettings), newest first.
QStringList recentFiles();
void addRecentFile(const QString& path);

}  // namespace manifold::ui
