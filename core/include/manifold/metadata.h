#pragma once
// The user's own per-point metadata (rotation angle, hit class, run number,
// labels): named columns of length N beside a dataset of N rows, loaded from
// files, and their correlation with the diffusion coordinates.
//
// Columns are numeric (double; NaN = missing), categorical (an integer code
// per row with the category names) or angles (cyclic; stored as given, in
// radians or degrees as `unit` says).
//
// Sources (load_metadata_file):
//   FILE.npy            N or N x m numbers; m columns named NAME_0.. (NAME
//                       alone for N); NAME = the COLUMN given or the file's
//                       stem (NAME.angles.npy -> "angle", NAME.labels.npy ->
//                       "label", a categorical column of the integer values,
//                       named by class_names_beside() or NAME.json's "classes")
//   FILE.csv, FILE.tsv  a header line, then N rows; a column is numeric when
//                       every non-empty field is a finite number, else
//                       categorical; RFC 4180 quotes ("a, b", "say ""x""")
//   FILE.cxi|h5|hdf5:/PATH
//                       the HDF5 dataset at PATH: N or N x m numbers, or N strings
//   *-labels-idx1-ubyte[.gz]
//                       MNIST IDX labels (categorical), class names from a
//                       list file beside it when there is one (see class_names_beside),
//                       else Fashion-MNIST's ten when a folder above says "fashion"
// Angle columns: a column whose name holds "angle", "theta", "azimuth" or
// "rotation" (or from NAME.angles.npy); degrees when the name holds "deg" or
// any |value| exceeds 2 pi, else radians. Integer columns whose name has the
// word label, class, category, cluster, run, group, type, id or batch
// ("run", "hit_class", "cluster id") are categorical, like NAME.labels.npy.
//
// Discovery beside DATA = DIR/NAME.npy: DIR/NAME.labels.npy,
// DIR/NAME.angles.npy, DIR/NAME.quaternions.npy (the simulator's ground
// truth), DIR/NAME.csv; for DIR/X-images-idx3-ubyte[.gz] the MNIST labels
// DIR/X-labels-idx1-ubyte[.gz]; inside DATA = FILE.cxi|h5 the datasets of
// /entry_1/sample_1 (CXI's sample facts: rotation_angle, ...).
//
// Every failure is one line naming the file (and line and column for text files).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace manifold {

enum class MetadataKind { Numeric, Categorical, Angle };
enum class AngleUnit { Radians, Degrees };

std::string to_string(MetadataKind kind);

struct MetadataColumn {
  std::string name;
  MetadataKind kind = MetadataKind::Numeric;
  std::string source;                   ///< "FILE" or "FILE:COLUMN" it came from
  std::vector<double> values;           ///< numeric and angle: one per row (NaN = missing)
  AngleUnit unit = AngleUnit::Radians;  ///< angle columns: the unit of `values`
  std::vector<int32_t> codes;           ///< categorical: one per row, index into categories (-1 = missing)
  std::vector<std::string> categories;  ///< categorical: name of each code

  int64_t rows() const;
  /// Angle columns: value `i` in radians; NaN when missing.
  double radians(int64_t i) const;
  /// The value of row `i` as text: %.17g, the category name, "" when missing.
  std::string text(int64_t i) const;
};

/// Columns of equal length `rows`, with distinct names.
class MetadataTable {
 public:
  MetadataTable() = default;
  explicit MetadataTable(int64_t rows) : rows_(rows) {}

  int64_t rows() const { return rows_; }
  bool empty() const { return columns_.empty(); }
  const std::vector<MetadataColumn>& columns() const { return columns_; }
  /// The column named `name`, or nullptr.
  const MetadataColumn* find(const std::string& name) const;
  /// Adds a column; one of another length is an Error naming its source
  /// ("labels.npy: 999 values but the dataset has 1000 rows"). A repeated
  /// name gets a suffix (_2, _3, ...).
  void add(MetadataColumn column);

 private:
  int64_t rows_ = 0;
  std::vector<MetadataColumn> columns_;
};

/// FILE[:COLUMN]: the file is the longest prefix before a ':' that exists
/// (paths may hold ':'); COLUMN is what follows (empty when none).
struct MetadataSpec {
  std::string file;
  std::string column;
};
MetadataSpec parse_metadata_spec(const std::string& text);

/// The columns of one file (see the formats above). COLUMN selects a csv/tsv
/// column, names the HDF5 dataset (required there), and renames an .npy or
/// label file's column. Throws Error naming the file.
std::vector<MetadataColumn> load_metadata_file(const MetadataSpec& spec);

/// MNIST IDX labels as a categorical column; category names from
/// `class_names` (one per line, code = line number) when given, else
/// Fashion-MNIST's (T-shirt/top ... Ankle boot) for a file in a folder whose
/// name holds "fashion" and codes 0..9, else the numbers.
MetadataColumn read_idx_labels(const std::string& path, const std::string& class_names = {});

/// The class-name list beside a label file, or "": STEM.classes.txt, then
/// classes.txt in the same folder (STEM = the file name without .gz, .npy).
std::string class_names_beside(const std::string& label_file);

/// The 1-D and 2-D datasets directly inside `group` of an HDF5 file, as
/// absolute paths in name order; empty when the file or group is not there.
std::vector<std::string> hdf5_datasets_in(const std::string& path, const std::string& group);

/// Every 1-D or 2-D dataset of the HDF5 file `path` whose first dimension is
/// `rows` (the candidates for a metadata column), as absolute paths in name
/// order, wherever they are in the file. Throws Error naming a file HDF5
/// cannot open.
std::vector<std::string> hdf5_datasets_of_length(const std::string& path, int64_t rows);

/// Metadata files found beside the dataset `data_path` (see above), in that order.
std::vector<MetadataSpec> discover_metadata(const std::string& data_path);

/// Explicit specs (each an Error when unreadable or of another length than
/// `rows`), then, when `data_path` is not empty, the files discovered beside
/// it (one of another length is skipped with a line in `warnings`).
MetadataTable load_metadata(const std::vector<std::string>& specs, int64_t rows, const std::string& data_path,
                            std::vector<std::string>* warnings = nullptr);

// ---- correlation with the diffusion coordinates ----------------------------

/// How one column relates to the coordinates psi_1..psi_m:
///   numeric      Pearson's r with each psi_k (rows with a value)
///   categorical  the correlation ratio eta = sqrt(SS_between / SS_total) of
///                each psi_k grouped by category (0: no relation, 1: psi_k
///                is constant within each category); undefined (NaN) for
///                fewer than 2 categories or fewer than 10 points per
///                category on average (one point each makes eta 1)
///   angle        the circular-linear correlation R (Mardia 1976) of the
///                angle with each psi_k, in [0, 1]; and for the pair
///                atan2(psi_j', psi_i') of every two of the first 6
///                coordinates (psi' = psi standardised to zero mean and unit
///                variance, so lambda^t scaling does not matter), the
///                Fisher-Lee circular correlation (Fisher and Lee 1983) with
///                the angle and with twice the angle (a two-fold symmetry);
///                the largest |rho| is kept in `pair_*`.
struct MetadataCorrelation {
  std::string name;
  MetadataKind kind = MetadataKind::Numeric;
  std::string statistic;               ///< "pearson", "correlation_ratio" or "circular_linear"
  std::vector<double> per_coordinate;  ///< m values, one per psi_k (NaN when undefined)
  int best = -1;                       ///< index (0-based) of the largest |value|; -1 when none
  // Angle columns only:
  int pair_i = -1, pair_j = -1;  ///< 0-based coordinates of the best atan2(psi_j, psi_i)
  int pair_harmonic = 0;         ///< 1: the angle, 2: twice the angle
  double pair_fisher_lee = 0;    ///< signed Fisher-Lee rho of that pair
  int64_t rows_used = 0;         ///< embedded points with a value
};

/// Correlation of every column with the n x m coordinates (row-major) of the
/// embedded points; point `e` is row point_index[e] of the table (null: e).
std::vector<MetadataCorrelation> correlate_metadata(const MetadataTable& table, const double* coordinates, int64_t n,
                                                    int m, const int64_t* point_index);

/// Fisher-Lee circular correlation of two angle samples (radians), NaN pairs skipped.
double fisher_lee(const std::vector<double>& a, const std::vector<double>& b);

/// The `metadata_correlation` block of embedding.json.
nlohmann::json correlation_json(const MetadataTable& table, const std::vector<MetadataCorrelation>& correlations);

/// One terminal line: the best relation of each column ("metadata: angle ~
/// atan2(psi2, psi1) circular 0.998; label ~ psi1 eta 0.83"); columns
/// without one (constant, too many categories) are only counted.
std::string correlation_summary(const std::vector<MetadataCorrelation>& correlations);

}  // namespace manifold
