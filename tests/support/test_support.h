#pragma once
// Shared by the tests: fresh random data, a float64 brute-force k-NN
// reference, an honest exactness check, temporary folders, file contents,
// error messages, running the CLI.
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "manifold/dataset.h"
#include "manifold/diffusion_map.h"
#include "manifold/knn.h"

namespace testing_support {

/// True in a sanitized build (-DMANIFOLD_SANITIZE=ON, as scripts/sanitize.sh
/// configures; the tests see MANIFOLD_SANITIZED), where code runs many times
/// slower.
#ifdef MANIFOLD_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
/// A problem size: `full`, or `sanitized` in the sanitized build. The slowest
/// tests take their sizes from here; the smaller size must still reach what
/// the test is about (several tiles, a partial tile, a block boundary).
constexpr int64_t scaled(int64_t full, int64_t sanitized) { return kSanitized ? sanitized : full; }

/// N x d Gaussian values (never zeros), optionally with `duplicates` rows
/// copied from earlier rows (exact ties).
manifold::Dataset random_dataset(int64_t n, int64_t d, uint64_t seed, int64_t duplicates = 0);

/// The first `n` Fashion-MNIST test images (Debian's dataset-fashion-mnist, or
/// the folder named by $MANIFOLD_FASHION_MNIST_DIR), or an empty dataset when
/// neither is there.
manifold::Dataset fashion_mnist(int64_t n, bool train = false);
std::string fashion_mnist_dir();

/// Reference neighbours in float64 for every row: (true distance, index),
/// ascending by (distance, index), self excluded unless keep_self.
struct Reference {
  int k = 0;
  std::vector<double> dist;    // n*k
  std::vector<int64_t> index;  // n*k
  std::vector<double> tol;     // per row: float32 error allowance on a distance
};
Reference brute_force(const manifold::Dataset& data, int k, manifold::Metric metric, bool keep_self);
/// The reference for the first k2 <= ref.k neighbours.
Reference slice(const Reference& ref, int k2);

/// Checks `g` against the reference: right shape; indices distinct and in
/// range; self excluded (unless keep_self); distances ascending and equal to
/// the true distances; every chosen neighbour no farther than the true k-th
/// neighbour beyond float32 rounding. Returns "" when fine, else the first
/// problem. `exact_rows` receives how many rows equal the reference exactly.
std::string check_graph(const manifold::KnnGraph& g, const manifold::Dataset& data, const Reference& ref,
                        int64_t* exact_rows = nullptr);

/// The certified exact ranking every backend promises, by brute force: for
/// every row the k smallest (key, index), key = the metric's distance from
/// the float64 sum of squared differences of the prepared rows, in the
/// device's summation order (core's exact_sum_sq_diff), rounded to float.
/// O(n^2 d): keep n d small, or rank only every `row_step`-th row (the
/// others' entries are left -1 and NaN).
manifold::KnnGraph exact_reference(const manifold::Dataset& ds, int k, manifold::Metric m, bool keep_self,
                                   int64_t row_step = 1);
/// Row i of a and b (indices and distances) as a message; "" when identical.
std::string row_difference(const manifold::KnnGraph& a, const manifold::KnnGraph& b, int64_t i);
/// Random normal rows in which `clusters` groups of `per_cluster` rows are
/// copies of one row perturbed by eps * N(0,1) (every 7th an exact copy),
/// scattered over the index range: neighbours closer together than any
/// GEMM can tell apart.
manifold::Dataset near_duplicates(int64_t n, int64_t d, uint64_t seed, int clusters, int per_cluster, float eps);
/// Rows that share a large common part, as diffraction patterns do: a
/// bright pattern (1e4 exp(-c/40) in column c, columns c % 17 == 5 masked
/// to zero) times a fluence 1 + 0.01 N(0,1), plus 3 U(0,1) noise; what
/// tells the rows apart is a small part of each norm (the certificate's
/// hard case before exact::choose_translation).
manifold::Dataset common_pattern_rows(int64_t n, int64_t d, uint64_t seed);
/// Rows with a bright spot common to all (columns 0-15: 1000 (1 + 0.001
/// N(0,1))) over dim noise (3 + 1.5 N(0,1)): the dim columns' values span
/// more than a factor 2 about their mean, so no offset moves them exactly,
/// and what the spot leaves of the norm about the mean is mostly theirs (the
/// rounded translation's case, for every metric).
manifold::Dataset bright_spot_rows(int64_t n, int64_t d, uint64_t seed);
/// Random normal rows about the origin, except row `far`: 1e5 in every
/// column (a hot frame), far from every other row.
manifold::Dataset one_far_row(int64_t n, int64_t d, uint64_t seed, int64_t far);
/// `count` photon-counted diffraction patterns of ubiquitin (1e5 photons,
/// size x size) about one axis: a rotation series, whose nearest distances
/// crowd above a common noise floor (the certificate's window holds many
/// points); an empty dataset when freesasa's 1ubq.pdb is not installed.
manifold::Dataset ubiquitin_rotation_series(int64_t count, int size);
/// First row (and column) where a and b differ, as a message; "" when the
/// indices and the distances are identical.
std::string first_difference(const manifold::KnnGraph& a, const manifold::KnnGraph& b);

/// Graphs with known diffusion spectra (the diffusion-map and eigensolver
/// tests): the exact k-NN graph of `pts` (n x d, by the CPU backend); the
/// circulant graph of n points evenly on a circle, k/2 neighbours each side;
/// n Fibonacci points on the unit sphere (n x 3); a noisy 2-D strip
/// 4 x 1 x 0.05 of 3000 points, k = 20.
manifold::KnnGraph knn_graph(const std::vector<double>& pts, int64_t n, int64_t d, int k, bool keep_self = false);
manifold::KnnGraph circle_graph(int64_t n, int k);
std::vector<double> sphere_points(int64_t n);
manifold::KnnGraph noisy_strip_graph(uint64_t seed);

/// The Gaussian kernel of fixed width (local scaling off): what the known
/// spectra (circle pairs, sphere triplets, Laplace-Beltrami ratios) are
/// about; local scaling, the default, changes the limit operator.
manifold::DiffusionParams fixed_bandwidth();
/// The diffusion matrix (stages 1-6) of `g` with `p`.
manifold::DiffusionMatrix diffusion_matrix_of(const manifold::KnnGraph& g,
                                              const manifold::DiffusionParams& p = fixed_bandwidth());
/// The top `count` eigenvalues of A densified, by Eigen's dense float64
/// solver (descending).
std::vector<double> dense_top_eigenvalues(const manifold::DiffusionMatrix& a, int count);
/// For returned eigenpairs: max_i |A v_i - lambda_i v_i| / |lambda_i|
/// recomputed with A's own mat-vec, and max |V^T V - I|.
std::pair<double, double> eigenpair_errors(const manifold::DiffusionMatrix& a, const manifold::Eigenpairs& e);

/// The whole content of the file at `path` ("" when it cannot be read).
std::string slurp(const std::string& path);

/// The message of the manifold::Error that `f` throws, or "" when it throws
/// none: what the one-line error tests compare.
std::string message_of(const std::function<void()>& f);

/// How many lines `s` holds (its newlines): the one-line error tests count
/// what a command printed.
int count_lines(const std::string& s);

/// A fresh empty folder under the system temp dir, removed by the destructor.
struct TempDir {
  TempDir();
  ~TempDir();
  std::string path;
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

/// Runs the manifold CLI (path from $MANIFOLD_CLI) with `args`; returns the
/// exit status and fills stderr/stdout text.
int run_cli(const std::string& args, std::string* err = nullptr, std::string* out = nullptr);

}  // namespace testing_support

/// Skips the current test (the caller includes gtest) when $MANIFOLD_CLI is
/// unset: CTest sets it to the built CLI, a bare test binary has no CLI to run.
#define REQUIRE_CLI() \
  if (!std::getenv("MANIFOLD_CLI")) GTEST_SKIP() << "MANIFOLD_CLI is not set (run through ctest)"
