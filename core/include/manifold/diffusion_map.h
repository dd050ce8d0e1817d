#pragma once
// Diffusion maps (Coifman-Lafon) from a k-NN graph.
//
// Pipeline (diffusion_map() runs all of it; the stages are public so the
// benchmark and the GUI can time or reuse them):
//   1. the first k' <= graph.k neighbours of every row (KnnGraph::sliced);
//   2. scaled squared distances s_ij = r_ij^2 / (sigma_i sigma_j), where
//      r_ij^2 is the squared Euclidean distance the metric stands for
//      (kernel_distance2: d^2 for Euclidean; 2 d for cosine and Pearson,
//      whose d = 1 - cos = |x^ - y^|^2 / 2 is already a squared distance of
//      the unit-norm rows) and sigma_i = r to the j-th neighbour (self-tuning
//      local scaling, j = min(7, k') by default; off: sigma = 1);
//   3. the symmetrised pattern: "or" keeps an edge present in either
//      direction with the larger kernel value (max), "and" keeps mutual edges
//      with the smaller value (min), "average" takes (W + W^T) / 2;
//   4. epsilon: a number, "median" (median over rows of the k'-th neighbour's
//      s), or "auto" (Berry-Giannakis-Harlim: the epsilon of a log grid that
//      maximises d log sum K / d log epsilon; 2 x that slope estimates the
//      intrinsic dimension);
//   5. K_ij = exp(-s_ij / epsilon) with the self-affinity K_ii = 1;
//   6. alpha-normalisation K^a = Q^-a K Q^-a (Q = row sums of K), D = row
//      sums of K^a, and the symmetric conjugate A = D^-1/2 K^a D^-1/2 in CSR;
//   7. the top M+1 eigenpairs of A by Spectra (implicitly restarted Lanczos)
//      with a multi-threaded CSR mat-vec; A is never dense;
//   8. Markov eigenvectors psi = v / sqrt(d), scaled so psi_0 = 1, and the
//      diffusion coordinates lambda_i^t psi_i, i = 1..M.
// A graph with several connected components is not embedded as a whole
// (the spectrum would be degenerate garbage): the largest component is
// embedded and DiffusionResult says so (graph_components, point_index).
// The same holds for points the kernel joins only by negligible weights
// (A_ij < kNegligibleWeight, e.g. outliers at a small epsilon): each such
// piece carries an eigenvalue within about k' x 1e-4 of 1 whose eigenvector
// sits on it alone, so they crowd the top of the spectrum with single
// points, and those nearer 1 than a Krylov solver can separate stall it
// (Fashion-MNIST, cosine, k' = 30 and the old d^2 kernel: escape
// probabilities down to 1e-14). They are left out too
// (DiffusionResult::weakly_joined_points) and the embedding says so.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/knn.h"
#include "manifold/parallel.h"
#include "manifold/progress.h"
#include "manifold/result_vector.h"

namespace manifold {

/// local_scaling's default: sigma_i = distance to the min(7, k')-th
/// neighbour (Zelnik-Manor and Perona's choice).
inline constexpr int kLocalScalingAuto = -1;
inline constexpr int kLocalScalingAutoNeighbour = 7;
/// The default eigensolve budget in products with A: ten times the
/// single-vector mat-vecs that the clustered spectrum of a 100,000-point
/// swiss roll needs (bench/diffusion/RESULTS.md). A block solver's product
/// with a whole block counts once: it reads A once, and costs a few
/// mat-vecs, not a block's worth (a budget per column starved the GPU's
/// Chebyshev filter on Fashion-MNIST at 0.1x the default epsilon).
inline constexpr int64_t kDefaultMaxMatvecs = 20000;
/// Kernel weights A_ij below this join nothing (see the header comment).
inline constexpr double kNegligibleWeight = 1e-4;

struct DiffusionParams {
  int k = 0;                       ///< neighbours used, 1..graph.k; 0 = all of the graph's
  std::string epsilon = "median";  ///< "median" | "auto" (Berry-Giannakis-Harlim) | a positive number
  double alpha = 1.0;   ///< alpha-normalisation, 0..1 (0 graph Laplacian, 0.5 Fokker-Planck, 1 Laplace-Beltrami)
  int components = 10;  ///< M diffusion coordinates (trivial one dropped); M + 1 < points embedded
  double t = 1.0;       ///< diffusion time, >= 0
  std::string symmetrize = "or";  ///< or (max) | and (min) | average
  int local_scaling =
      kLocalScalingAuto;     ///< kLocalScalingAuto, 0 off, or j in 1..k: sigma_i = distance to j-th neighbour
  int threads = 0;           ///< 0 = all cores
  double tolerance = 1e-10;  ///< eigensolver: relative residual per Ritz value (as ARPACK's tol)
  int ncv = 0;               ///< Lanczos basis size; 0 = chosen from M
  bool lock_check = true;    ///< look for eigenvalues missed because they are repeated (see top_eigenpairs)
  int64_t max_matvecs = kDefaultMaxMatvecs;  ///< eigensolve budget: products with A (a block product counts once)
  double time_limit_s = 0;                   ///< eigensolve budget in seconds; 0 = none
  /// "auto" (the registered device eigensolver when one is available and the
  /// component has at least kDeviceEigensolveMinRows points, or
  /// kDeviceEigensolveWarmMinRows once the device is in use, else the CPU),
  /// "cpu" (Spectra / warm LOBPCG) or "gpu" (the device's, or a UsageError).
  std::string eigensolver = "auto";
};

/// Below this many points `eigensolver = auto` stays on the CPU: the device
/// solve's fixed costs (context, transfers) exceed the CPU's whole solve. A
/// whole `manifold embed` in a fresh process breaks even about here
/// (bench/diffusion/RESULTS.md, "`--eigensolver auto`'s threshold").
inline constexpr int64_t kDeviceEigensolveMinRows = 20000;
/// The same once the device is in use by this process (DeviceEigensolver::
/// warm: its context made, e.g. by the GPU k-NN build before the embedding):
/// those fixed costs are paid, and the device solve is the faster from about
/// here (bench/diffusion/RESULTS.md, `manifold run` on Fashion-MNIST t10k).
inline constexpr int64_t kDeviceEigensolveWarmMinRows = 10000;

/// Rejects bad parameters for `graph` with one line (UsageError), and a graph
/// whose arrays disagree with its shape or hold out-of-range indices (Error).
void validate(const DiffusionParams& params, const KnnGraph& graph);
/// The parameter checks alone, for a graph of n points and k neighbours yet to be built.
void validate(const DiffusionParams& params, int64_t n, int graph_k);

/// The epsilon rule of `params.epsilon`: "median", "auto", or "value".
std::string epsilon_rule(const DiffusionParams& params);
/// "auto", "0" (off) or a neighbour 1..; throws UsageError otherwise.
int parse_local_scaling(const std::string& text);
/// local_scaling as files write it: "auto" or the number.
nlohmann::json local_scaling_json(int local_scaling);
/// The neighbour local scaling uses for k' neighbours (0: off).
int local_scaling_neighbour(const DiffusionParams& params, int kp);
/// The squared Euclidean distance a graph distance stands for: d^2 for
/// Euclidean, 2 d for cosine (1 - cos = |x^ - y^|^2 / 2 on unit-norm rows)
/// and Pearson (the same on centred unit-norm rows). The kernel is Gaussian
/// in it, so cosine and Pearson kernels are the Euclidean kernel of the
/// prepared rows, with the same tails (squaring 1 - cos again would give a
/// kernel in the fourth power of the angle, whose tails isolate outliers).
double kernel_distance2(double d, Metric metric);

/// The symmetric conjugate A = D^-1/2 K^a D^-1/2 restricted to the embedded
/// component, in CSR with the diagonal stored separately.
struct DiffusionMatrix {
  int64_t n = 0;                                  ///< rows (points embedded)
  std::vector<int64_t> row_ptr;                   ///< n + 1 offsets into col/val
  ResultVector<int32_t> col;                      ///< column of each off-diagonal entry, ascending per row
  ResultVector<double> val;                       ///< A_ij, symmetric (both sized, then written by parallel loops)
  std::vector<double> diag;                       ///< A_ii
  std::vector<double> degree;                     ///< d_i, row sums of K^a (for psi = v / sqrt(d))
  std::vector<double> density;                    ///< q_i, row sums of K before alpha-normalisation
  std::vector<double> sigma;                      ///< local scale per embedded point (empty without local scaling)
  std::vector<int64_t> point_index;               ///< graph row of each embedded point
  int64_t graph_points = 0;                       ///< rows of the input graph
  int graph_components = 1;                       ///< connected components of the symmetrised k-NN graph
  std::vector<int64_t> largest_graph_components;  ///< sizes of the largest (up to 3), descending
  /// Components besides the largest whose every listed neighbour is at
  /// distance 0: groups of identical images (blank frames), which no k
  /// joins to the rest; and their points.
  int identical_components = 0;
  int64_t identical_component_points = 0;
  int kernel_components = 1;         ///< components once weights below kNegligibleWeight are dropped
  int64_t weakly_joined_points = 0;  ///< points of the graph's largest component left out for that
  /// Auto local scaling: points whose neighbour of sigma_i is a duplicate
  /// (at distance 0), scaled by their nearest distinct neighbour instead.
  int64_t duplicate_scaled_points = 0;
  int k = 0;              ///< k' used
  int local_scaling = 0;  ///< neighbour of sigma_i (0: off)
  Metric metric = Metric::Euclidean;
  double epsilon = 0;
  nlohmann::json bgh;  ///< BGH curve when epsilon = auto, else null
  Timings timings;
  int64_t nnz() const { return static_cast<int64_t>(val.size()) + n; }
  /// y = A x (multi-threaded when large).
  void multiply(const double* x, double* y, int threads) const;
};

/// A's entries row by row with the diagonal merged in column order:
/// visit(i, pos, j, A_ij) for each, the diagonal as j == i. A's stored rows
/// hold no diagonal entry, so row i gains exactly one and its entries take
/// positions row_ptr[i] + i on: a CSR with the diagonal in place, its rows
/// visited in parallel on `threads` threads.
template <class Visit>
void visit_with_diagonal(const DiffusionMatrix& a, int threads, Visit&& visit) {
  constexpr int64_t kRows = 4096;
  parallel_for(
      0, (a.n + kRows - 1) / kRows, threads,
      [&](int64_t q) {
    for (int64_t i = q * kRows; i < std::min(a.n, (q + 1) * kRows); ++i) {
      const auto diagonal = static_cast<int32_t>(i);
      int64_t pos = a.row_ptr[static_cast<size_t>(i)] + i;
      bool placed = false;
      for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i + 1)]; ++e) {
        const int32_t j = a.col[static_cast<size_t>(e)];
        if (!placed && j > i) {
          visit(i, pos++, diagonal, a.diag[static_cast<size_t>(i)]);
          placed = true;
        }
        visit(i, pos++, j, a.val[static_cast<size_t>(e)]);
      }
      if (!placed) visit(i, pos, diagonal, a.diag[static_cast<size_t>(i)]);
    }
      },
      1);
}

/// A lower bound of A's spectrum for the Chebyshev filter: A is similar to
/// the row-stochastic P = D^-1 K^a and shares its diagonal, so by Gershgorin
/// every eigenvalue is at least min_i (2 A_ii - 1) (and at least -1). A kernel
/// narrow enough to stall puts much weight on each point itself, and a bound
/// above -1 shortens the interval the filter must damp.
double spectrum_lower_bound(const DiffusionMatrix& a);

/// Stages 1-6.
DiffusionMatrix diffusion_matrix(const KnnGraph& graph, const DiffusionParams& params, Progress& progress);

struct Eigenpairs {
  std::vector<double> values;   ///< descending
  std::vector<double> vectors;  ///< n x count, row-major, unit norm
  int count = 0;
  int ncv = 0;
  int64_t iterations = 0;          ///< restarts
  int64_t matvecs = 0;             ///< products with A, all stages
  int64_t check_matvecs = 0;       ///< of which the lock check's
  int recovered = 0;               ///< eigenpairs the lock check found that the first solve missed
  bool check_settled = false;      ///< the lock check reached a verdict (false: off, or its step budget ran out)
  double max_residual = 0;         ///< max_i |A v_i - lambda_i v_i| / |lambda_i|
  std::vector<int32_t> row_order;  ///< the row order the solve ran in (order[new] = old); empty: A's own
  nlohmann::json details;          ///< solver-specific figures (the device solver's), or null
};

struct EigenOptions {
  double tolerance = 1e-10;
  int ncv = 0;  ///< 0 = from count
  int threads = 0;
  bool lock_check = true;                    ///< look for eigenvalues missed because they are repeated
  int64_t max_matvecs = kDefaultMaxMatvecs;  ///< budget: products with A (a block product counts once); 0 = none
  double time_limit_s = 0;                   ///< budget in seconds; 0 = none
  bool reorder = true;                       ///< solve on the matrix in reverse Cuthill-McKee order (mat-vec locality)
  /// Lanczos start vector (n values, the matrix's row order), e.g. the sum
  /// of approximate eigenvectors; empty = random. A small random part is
  /// added; the lock check always starts from its own random vectors.
  std::vector<double> start;
  /// Start block for a block solver (the device's): n x start_cols values,
  /// row-major, A's row order (e.g. previous eigenvectors); empty = random.
  std::vector<double> start_block;
  int start_cols = 0;
};

/// An eigensolver on an accelerator, registered at start-up by the library
/// that has one (gpu/: manifold::gpu::register_gpu_eigensolver). `solve`
/// returns what top_eigenpairs returns, to options.tolerance, or throws.
struct DeviceEigensolver {
  std::string name;                 ///< "gpu"
  std::string method;               ///< what embedding.json's solver.method says
  std::function<bool()> available;  ///< a device is present
  std::function<bool()> warm;       ///< optional: the device is already in use by this process
  /// Optional: starts the device (driver, context) ahead of the first
  /// solve; diffusion_map() runs it on another thread while it builds the matrix.
  std::function<void()> start;
  std::function<Eigenpairs(const DiffusionMatrix&, int count, const EigenOptions&, Progress&)> solve;
};
/// Thrown by an eigensolve that spent its budget (EigenOptions::max_matvecs,
/// time_limit_s) without converging; what() is the one line for the user.
struct EigensolveBudgetExceeded : Error {
  EigensolveBudgetExceeded(const std::string& what, int64_t matvecs_spent, double seconds_spent)
      : Error(what), matvecs(matvecs_spent), seconds(seconds_spent) {}
  int64_t matvecs = 0;  ///< products with A spent (block products for a block solver)
  double seconds = 0;
};
/// The one line for a solve that stopped at its budget: what was spent, and
/// why the matrix is hard (escape probabilities of the most isolated
/// points) with what to change.
std::string budget_message(const DiffusionMatrix& a, int64_t matvecs, double seconds, const EigenOptions& options);

/// Registers `solver` (replacing any); one without `solve` unregisters.
void register_device_eigensolver(DeviceEigensolver solver);
/// The registered device eigensolver, or null.
const DeviceEigensolver* device_eigensolver();

/// The `count` largest (algebraic) eigenpairs of A by Spectra's SymEigsSolver
/// (implicitly restarted Lanczos) on a CSR operator, run on A in reverse
/// Cuthill-McKee order (options.reorder; vectors come back in A's order).
/// A single start vector sees one direction per eigenspace, so a repeated
/// eigenvalue (a circle's pairs, a sphere's triplet) can come back once: the
/// lock check then runs cheap Lanczos steps on A with the found vectors
/// locked out, from another random start vector, until its top Ritz value
/// either beats the smallest found eigenvalue (a missed eigenvalue: it is
/// solved to the tolerance, swapped in, and the check repeats) or converges
/// below it. Progress reports mat-vecs and cancels between them. Throws
/// Error when the solver does not converge.
Eigenpairs top_eigenpairs(const DiffusionMatrix& a, int count, const EigenOptions& options, Progress& progress);

/// Coordinates a few points carry, and eigenvalues at 1: what makes an
/// embedding degenerate, found after the solve (diagnose()).
struct EmbeddingDiagnostics {
  std::vector<double>
      participation;           ///< per coordinate 1..m: 1 / sum v^4 of its unit eigenvector of A (points carrying it)
  std::vector<int> localised;  ///< coordinates (1-based) with participation below localised_below
  double localised_below = 0;  ///< max(10, 0.2% of the points)
  std::vector<int> near_one;   ///< coordinates with 1 - lambda < kNearOne
  std::vector<std::string> warnings;  ///< one line each, as the CLI and embedding.json give them (diagnostic_warnings)
  nlohmann::json to_json() const;
};
/// 1 - lambda below this: the coordinate is a nearly separate piece of the graph.
inline constexpr double kNearOne = 1e-6;

struct DiffusionResult {
  int64_t n = 0;                                  ///< points embedded
  int m = 0;                                      ///< diffusion coordinates
  std::vector<double> eigenvalues;                ///< m+1 values, descending, the trivial 1 first
  std::vector<double> psi;                        ///< n*(m+1) Markov eigenvectors, row-major, psi_0 = 1
  std::vector<double> coordinates;                ///< n*m diffusion coordinates lambda_i^t psi_i, row-major
  double epsilon = 0;                             ///< kernel width used
  int graph_components = 1;                       ///< connected components of the symmetrised graph
  std::vector<int64_t> largest_graph_components;  ///< DiffusionMatrix::largest_graph_components
  int identical_components = 0;                   ///< DiffusionMatrix::identical_components
  int64_t identical_component_points = 0;         ///< DiffusionMatrix::identical_component_points
  int kernel_components = 1;            ///< components once negligible kernel weights are dropped (DiffusionMatrix)
  int64_t weakly_joined_points = 0;     ///< points left out for joining only by negligible weights
  int64_t duplicate_scaled_points = 0;  ///< DiffusionMatrix::duplicate_scaled_points
  std::vector<int64_t> point_index;     ///< rows of the input embedded (all unless disconnected)
  Metric metric = Metric::Euclidean;    ///< the graph's (the Nystrom extension needs it)
  int local_scaling = 0;                ///< neighbour of sigma_i used (0: off)
  EmbeddingDiagnostics diagnostics;
  nlohmann::json bgh;  ///< {"epsilon":[...], "log_sum":[...], "slope":[...], "dimension": d} when epsilon=auto
  Timings timings;
  // What the Nystrom extension needs, and what embedding.json records.
  int64_t graph_points = 0;     ///< rows of the input graph
  int k = 0;                    ///< k' used
  std::vector<double> density;  ///< q_i per embedded point (row sums of K before alpha)
  std::vector<double> sigma;    ///< local scale per embedded point (empty without local scaling)
  nlohmann::json solver;        ///< {"ncv", "iterations", "matvecs", "tolerance"}
  /// The solver's row order (reverse Cuthill-McKee of this k' graph,
  /// order[new] = old): rediffuse() reuses it for the next matrix on the
  /// same points, whose pattern is the same (an epsilon change) or nearly
  /// (a k' change). Only speed depends on it. Empty when unknown.
  std::vector<int32_t> row_order;
};

/// `start_from` (optional): an earlier result over the same points (the
/// previous embedding, or rediffuse()'s preview) whose eigenvectors start
/// the Lanczos run; the result is the same to the tolerance, reached in
/// somewhat fewer mat-vecs (the clustered top of the spectrum, not the start,
/// sets most of the cost). Ignored when it embedded other points.
DiffusionResult diffusion_map(const KnnGraph& graph, const DiffusionParams& params, Progress& progress,
                              const DiffusionResult* start_from = nullptr);

/// Re-embedding for interaction after a change of k' or epsilon on the same
/// graph, to the solver tolerance. Krylov methods need thousands of mat-vecs
/// when the top of the spectrum is clustered (gaps ~1e-5 at N = 1e5),
/// whatever their start; but the eigenvectors of a diffusion operator
/// approximate the same Laplace-Beltrami eigenfunctions for every k' and
/// epsilon, so the previous ones (mapped to the new degrees) start block
/// LOBPCG on L = I - A, preconditioned by two smoothed-aggregation AMG
/// V-cycles for L + shift I built on the new matrix, which converges in ten or so
/// iterations independent of the clustering. result.solver holds
/// "max_residual" (recomputed from A), "converged" (every pair reached
/// params.tolerance: the result is the exact solve's, to the tolerance), the
/// iteration, mat-vec and V-cycle counts and the AMG hierarchy.
/// `max_iterations` (0: the solver's default, 60) caps the LOBPCG
/// iterations, params.time_limit_s its time; a result that stopped there has
/// converged = false and is a preview (diffusion_map(..., &it) gives the
/// exact solve, within its own budget). Falls back to
/// diffusion_map() (converged, method "Spectra ...") when `previous`
/// embedded other points or the component is too small for the block.
/// `preview` (optional): `show` is called once, on the solving thread, with
/// the first iterate whose residual is within `tolerance` (looser than
/// params.tolerance), if the solve has run `after_s` seconds by then -- an
/// embedding to draw while the solve refines it (solver "preview": true,
/// "converged": false, "max_residual": the iterate's own estimate).
struct RediffusePreview {
  double tolerance = 1e-6;
  double after_s = 0.15;
  std::function<void(DiffusionResult&&)> show;
};
DiffusionResult rediffuse(const KnnGraph& graph, const DiffusionParams& params, const DiffusionResult& previous,
                          Progress& progress, int max_iterations = 0, const RediffusePreview* preview = nullptr);

/// How closely `other` reproduces `ref` (two embeddings of the same points
/// with the same number of coordinates, e.g. a re-embedding and the full
/// solve). Eigenvectors are compared as the orthonormal eigenvectors
/// v = sqrt(d) psi of A (`degree`: A's d, DiffusionMatrix::degree), cluster
/// by cluster: consecutive eigenvalues of ref whose distance is at most
/// `cluster_gap` (1 - lambda) are one cluster, whose eigenvectors are only
/// defined as a subspace; worst_cos is the smallest, over clusters, cosine of
/// the largest principal angle between the two spans (the smallest singular
/// value of V_ref^T V_other: |cos| for a single vector). The trivial
/// psi_0 = 1 is left out of worst_cos.
struct EmbeddingAgreement {
  double worst_cos = 1;
  int clusters = 0;  ///< clusters among the non-trivial pairs
  int largest_cluster = 0;
  double max_eigenvalue_difference = 0;     ///< max |lambda_ref - lambda_other|
  double max_rel_error_1_minus_lambda = 0;  ///< max |lambda_ref - lambda_other| / (1 - lambda_ref), non-trivial pairs
};
EmbeddingAgreement compare_embeddings(const DiffusionResult& ref, const DiffusionResult& other,
                                      const std::vector<double>& degree, double cluster_gap = 1e-3);

/// Nystrom extension: places `count` new points given, for each, `kn`
/// neighbour rows of the input graph (indices, -1 = unused) and the true
/// distances to them (same metric as the graph). The kernel, local scaling
/// (sigma of the new point = distance to its j-th listed neighbour) and
/// alpha-normalisation are those of `result` and `params`. Neighbours outside
/// the embedded component are ignored. Returns count x m diffusion
/// coordinates, row-major; `psi_out` (optional) receives count x (m+1) psi.
/// A point given exactly its kernel row (itself at distance 0 included)
/// reproduces its training coordinates. Throws Error when a point has no
/// neighbour in the embedded component.
std::vector<double> nystrom_extend(const DiffusionResult& result, const DiffusionParams& params, int64_t count, int kn,
                                   const int64_t* indices, const float* distances,
                                   std::vector<double>* psi_out = nullptr);

/// The diagnostics of `r` (its eigenvalues and Markov eigenvectors, A's
/// degrees `degree`), with one warning line per finding, including the
/// points left out (graph components, weakly joined points).
EmbeddingDiagnostics diagnose(const DiffusionResult& r, const std::vector<double>& degree);

/// Where the reader of the warnings learns which points were embedded, which
/// the line about a disconnected graph says: only the caller knows.
enum class EmbeddedPointsShown {
  /// point_index.npy beside the files lists them (the CLI's lines, embedding.json).
  ListedInPointIndex,
  /// The explorer's view draws only them; its banner shows before any export
  /// has written a point_index.npy.
  DrawnInView,
};

/// The warning lines of `d`, the diagnostics of `r`, one per finding (points
/// left out, duplicates scaled, weakly joined points, eigenvalues at 1,
/// localised coordinates), the left-out points worded for `where`.
/// diagnose() fills EmbeddingDiagnostics::warnings with those for
/// ListedInPointIndex.
std::vector<std::string> diagnostic_warnings(const DiffusionResult& r, const EmbeddingDiagnostics& d,
                                             EmbeddedPointsShown where);

/// Fisher-Lee circular correlation of two angle samples (radians), in
/// [-1, 1]; +-1 when b = +-a + constant. Needs no mean direction, so it is
/// well defined for angles spread uniformly over the circle.
double circular_correlation(const std::vector<double>& a, const std::vector<double>& b);
/// The same from the angles' sines and cosines (n each; 0 when a sample has
/// no spread), for callers that have them without the angles.
double circular_correlation(const double* sin_a, const double* cos_a, const double* sin_b, const double* cos_b,
                            size_t n);

}  // namespace manifold
