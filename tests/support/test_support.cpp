#include "test_support.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/wait.h>

#include "manifold/error.h"
#include "manifold/exact/certify.h"
#include "manifold/exact/error_bound.h"
#include "manifold/parallel.h"
#include "manifold/pdb.h"
#include "manifold/progress.h"
#include "manifold/simulate.h"

namespace fs = std::filesystem;
using namespace manifold;

namespace testing_support {

Dataset random_dataset(int64_t n, int64_t d, uint64_t seed, int64_t duplicates) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n * d));
  for (auto& x : v) x = normal(rng);
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  for (int64_t t = 0; t < duplicates; ++t) {
    int64_t dst = pick(rng), src = pick(rng);
    if (dst == src) continue;
    std::copy_n(v.begin() + src * d, d, v.begin() + dst * d);
  }
  Dataset ds(n, d, std::move(v));
  ds.source = "random";
  ds.format = "random";
  ds.source_dtype = "float32";
  return ds;
}

KnnGraph knn_graph(const std::vector<double>& pts, int64_t n, int64_t d, int k, bool keep_self) {
  std::vector<float> v(pts.begin(), pts.end());
  Dataset ds(n, d, std::move(v));
  register_cpu_backend();
  auto b = make_backend("cpu");
  KnnParams p;
  p.k = k;
  p.keep_self = keep_self;
  Progress progress;
  return b->build(ds, p, progress);
}

KnnGraph circle_graph(int64_t n, int k) {
  KnnGraph g;
  g.n = n;
  g.d = 2;
  g.k = k;
  for (int64_t i = 0; i < n; ++i)
    for (int j = 1; j <= k / 2; ++j)
      for (int s : {-1, 1}) {
        g.indices.push_back(((i + s * j) % n + n) % n);
        g.distances.push_back(static_cast<float>(2 * std::sin(M_PI * j / n)));
      }
  return g;
}

std::vector<double> sphere_points(int64_t n) {
  std::vector<double> pts;
  const double golden = M_PI * (3 - std::sqrt(5.0));
  for (int64_t i = 0; i < n; ++i) {
    const double z = 1 - 2 * (i + 0.5) / n, r = std::sqrt(1 - z * z), t = golden * i;
    pts.push_back(r * std::cos(t));
    pts.push_back(r * std::sin(t));
    pts.push_back(z);
  }
  return pts;
}

KnnGraph noisy_strip_graph(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const int64_t n = 3000;
  std::vector<double> pts;
  for (int64_t i = 0; i < n; ++i) pts.insert(pts.end(), {4 * u(rng), u(rng), 0.05 * u(rng)});
  return knn_graph(pts, n, 3, 20);
}

DiffusionParams fixed_bandwidth() {
  DiffusionParams p;
  p.local_scaling = 0;
  return p;
}

DiffusionMatrix diffusion_matrix_of(const KnnGraph& g, const DiffusionParams& p) {
  Progress progress;
  return diffusion_matrix(g, p, progress);
}

std::vector<double> dense_top_eigenvalues(const DiffusionMatrix& a, int count) {
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(a.n, a.n);
  for (int64_t i = 0; i < a.n; ++i) {
    m(i, i) = a.diag[static_cast<size_t>(i)];
    for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i) + 1]; ++e)
      m(i, a.col[static_cast<size_t>(e)]) = a.val[static_cast<size_t>(e)];
  }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(m, Eigen::EigenvaluesOnly);
  std::vector<double> v;
  for (int c = 0; c < count; ++c) v.push_back(es.eigenvalues()[a.n - 1 - c]);
  return v;
}

std::pair<double, double> eigenpair_errors(const DiffusionMatrix& a, const Eigenpairs& e) {
  Eigen::MatrixXd v(a.n, e.count);
  for (int64_t i = 0; i < a.n; ++i)
    for (int c = 0; c < e.count; ++c) v(i, c) = e.vectors[static_cast<size_t>(i * e.count + c)];
  double res = 0;
  std::vector<double> y(static_cast<size_t>(a.n));
  for (int c = 0; c < e.count; ++c) {
    const Eigen::VectorXd x = v.col(c);
    a.multiply(x.data(), y.data(), 1);
    double r2 = 0;
    for (int64_t i = 0; i < a.n; ++i)
      r2 += std::pow(y[static_cast<size_t>(i)] - e.values[static_cast<size_t>(c)] * x[i], 2);
    res = std::max(res, std::sqrt(r2) / std::abs(e.values[static_cast<size_t>(c)]));
  }
  const double orth = (v.transpose() * v - Eigen::MatrixXd::Identity(e.count, e.count)).cwiseAbs().maxCoeff();
  return {res, orth};
}

std::string fashion_mnist_dir() {
  // The GPU machine has no Debian packages: the data travel with the tests.
  if (const char* dir = std::getenv("MANIFOLD_FASHION_MNIST_DIR")) return dir;
  return "/usr/share/datasets/fashion-mnist";
}

Dataset fashion_mnist(int64_t n, bool train) {
  std::string path = fashion_mnist_dir() + (train ? "/train-images-idx3-ubyte.gz" : "/t10k-images-idx3-ubyte.gz");
  if (!fs::exists(path)) return {};
  ReadOptions ro;
  ro.max_rows = n;
  return load_dataset(path, ro);
}

Reference brute_force(const Dataset& data, int k, Metric metric, bool keep_self) {
  const int64_t n = data.rows(), d = data.cols();
  // Prepared rows in double.
  std::vector<double> x(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n; ++i) {
    const float* r = data.row(i);
    double mean = 0;
    if (metric == Metric::Pearson) {
      for (int64_t c = 0; c < d; ++c) mean += r[c];
      mean /= static_cast<double>(d);
    }
    double ss = 0;
    for (int64_t c = 0; c < d; ++c) ss += (r[c] - mean) * (r[c] - mean);
    double scale = metric == Metric::Euclidean ? 1.0 : 1.0 / std::sqrt(ss);
    for (int64_t c = 0; c < d; ++c) x[i * d + c] = (metric == Metric::Euclidean ? r[c] : (r[c] - mean) * scale);
  }
  std::vector<double> norm(static_cast<size_t>(n));
  double max_norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t c = 0; c < d; ++c) s += x[i * d + c] * x[i * d + c];
    norm[i] = std::sqrt(s);
    max_norm = std::max(max_norm, norm[i]);
  }
  Reference ref;
  ref.k = k;
  ref.dist.resize(static_cast<size_t>(n * k));
  ref.index.resize(static_cast<size_t>(n * k));
  ref.tol.resize(static_cast<size_t>(n));
  const double u = std::ldexp(1.0, -24);
  parallel_for(0, n, 0, [&](int64_t i) {
    std::vector<std::pair<double, int64_t>> all;
    all.reserve(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      if (j == i && !keep_self) continue;
      double s = 0;
      for (int64_t c = 0; c < d; ++c) {
        double t = x[i * d + c] - x[j * d + c];
        s += t * t;
      }
      all.emplace_back(s, j);
    }
    std::partial_sort(all.begin(), all.begin() + k, all.end());
    // Float32 allowance on a squared distance computed as |x|^2+|y|^2-2x.y
    // (rounding of the inputs to float32 too): (d+4) u (|x|+|y|)^2.
    double t2 = (static_cast<double>(d) + 4) * u * (norm[i] + max_norm) * (norm[i] + max_norm);
    ref.tol[i] = t2;
    for (int j = 0; j < k; ++j) {
      ref.dist[i * k + j] = all[j].first;  // squared for now
      ref.index[i * k + j] = all[j].second;
    }
  });
  return ref;  // distances stay squared; check_graph compares squared values
}

Reference slice(const Reference& ref, int k2) {
  Reference r;
  r.k = k2;
  r.tol = ref.tol;
  const int64_t n = static_cast<int64_t>(ref.tol.size());
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < k2; ++j) {
      r.dist.push_back(ref.dist[i * ref.k + j]);
      r.index.push_back(ref.index[i * ref.k + j]);
    }
  return r;
}

namespace {
double true_sq(const Dataset& data, Metric metric, int64_t i, int64_t j) {
  const int64_t d = data.cols();
  const float* a = data.row(i);
  const float* b = data.row(j);
  if (metric == Metric::Euclidean) {
    double s = 0;
    for (int64_t c = 0; c < d; ++c) s += (static_cast<double>(a[c]) - b[c]) * (static_cast<double>(a[c]) - b[c]);
    return s;
  }
  double ma = 0, mb = 0;
  if (metric == Metric::Pearson) {
    for (int64_t c = 0; c < d; ++c) ma += a[c], mb += b[c];
    ma /= static_cast<double>(d);
    mb /= static_cast<double>(d);
  }
  double saa = 0, sbb = 0, sab = 0;
  for (int64_t c = 0; c < d; ++c) {
    double p = a[c] - ma, q = b[c] - mb;
    saa += p * p, sbb += q * q, sab += p * q;
  }
  double r = sab / std::sqrt(saa * sbb);
  return 2.0 - 2.0 * r;  // squared distance of the normalised rows
}
double to_true(double sq, Metric m) { return m == Metric::Euclidean ? std::sqrt(std::max(sq, 0.0)) : 0.5 * sq; }
}  // namespace

std::string check_graph(const KnnGraph& g, const Dataset& data, const Reference& ref, int64_t* exact_rows) {
  std::ostringstream err;
  if (g.n != data.rows() || g.k != ref.k || static_cast<int64_t>(g.indices.size()) != g.n * g.k ||
      static_cast<int64_t>(g.distances.size()) != g.n * g.k) {
    err << "shape: n=" << g.n << " k=" << g.k;
    return err.str();
  }
  int64_t exact = 0;
  const int k = g.k;
  for (int64_t i = 0; i < g.n; ++i) {
    const double kth = ref.dist[i * k + k - 1];
    const double tol = ref.tol[i];
    bool same = true;
    std::vector<int64_t> seen;
    for (int j = 0; j < k; ++j) {
      int64_t nb = g.indices[i * k + j];
      if (nb < 0 || nb >= g.n) return "row " + std::to_string(i) + ": index out of range";
      if (nb == i && !g.keep_self) return "row " + std::to_string(i) + ": contains itself";
      seen.push_back(nb);
      double sq = true_sq(data, g.metric, i, nb);
      if (sq > kth + 2 * tol) {
        err << "row " << i << " position " << j << ": neighbour " << nb << " at squared distance " << sq
            << " is farther than the true k-th (" << kth << ", tol " << tol << ")";
        return err.str();
      }
      double want = to_true(sq, g.metric);
      double got = g.distances[i * k + j];
      double dtol = g.metric == Metric::Euclidean ? (tol / std::max(want, 1e-30) + 1e-6 * want) : tol;
      if (std::abs(got - want) > std::max(dtol, 1e-6 * std::abs(want)) + 1e-7) {
        err << "row " << i << " position " << j << ": distance " << got << " but the true distance is " << want;
        return err.str();
      }
      if (j > 0 && g.distances[i * k + j] < g.distances[i * k + j - 1])
        return "row " + std::to_string(i) + ": distances not ascending";
      if (nb != ref.index[i * k + j]) same = false;
    }
    std::sort(seen.begin(), seen.end());
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end())
      return "row " + std::to_string(i) + ": repeated neighbour";
    exact += same;
  }
  if (exact_rows) *exact_rows = exact;
  return "";
}

TempDir::TempDir() {
  std::random_device rd;
  path = (fs::temp_directory_path() / ("manifold-test-" + std::to_string(rd()))).string();
  fs::create_directories(path);
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

int run_cli(const std::string& args, std::string* err, std::string* out) {
  const char* cli = std::getenv("MANIFOLD_CLI");
  if (!cli) return -1;
  TempDir t;
  std::string cmd = std::string("'") + cli + "' " + args + " >" + t.path + "/out 2>" + t.path + "/err";
  int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  if (err) *err = slurp(t.path + "/err");
  if (out) *out = slurp(t.path + "/out");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

KnnGraph exact_reference(const Dataset& ds, int k, Metric m, bool keep_self, int64_t row_step) {
  const PreparedRows rows = prepare_rows(ds, m);
  const int64_t n = rows.rows, d = rows.cols;
  KnnGraph g;
  g.n = n, g.d = d, g.k = k, g.metric = m, g.keep_self = keep_self;
  g.indices.assign(static_cast<size_t>(n * k), -1);
  g.distances.assign(static_cast<size_t>(n * k), NAN);
  parallel_for(
      0, n, 0,
      [&](int64_t i) {
    if (i % row_step != 0) return;
    std::vector<float> keys(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      keys[static_cast<size_t>(j)] = (j == i && !keep_self)
                                         ? INFINITY
                                         : exact::key_of(exact::exact_sum_sq_diff(rows.data + i * d, rows.data + j * d,
                                                                                  d),
                                                         m == Metric::Euclidean);
    exact::select_k_from_keys(keys.data(), n, k, g.indices.data() + i * k, g.distances.data() + i * k);
      },
      1);
  return g;
}

Dataset near_duplicates(int64_t n, int64_t d, uint64_t seed, int clusters, int per_cluster, float eps) {
  Dataset base = testing_support::random_dataset(n, d, seed);
  std::vector<float> v(base.data(), base.data() + n * d);
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<float> normal(0.f, 1.f);
  int64_t next = 0;
  for (int c = 0; c < clusters && next < n; ++c) {
    const int64_t src = next++;
    for (int p = 1; p < per_cluster && next < n; ++p, ++next)
      for (int64_t q = 0; q < d; ++q) v[next * d + q] = v[src * d + q] + (p % 7 == 0 ? 0.f : eps * normal(rng));
  }
  // Scatter the clusters over the index range (and so over tiles and devices).
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<float> w(v.size());
  for (int64_t i = 0; i < n; ++i) std::copy_n(v.begin() + perm[static_cast<size_t>(i)] * d, d, w.begin() + i * d);
  Dataset ds(n, d, std::move(w));
  ds.source = "near-duplicates";
  return ds;
}

Dataset common_pattern_rows(int64_t n, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n * d));
  for (int64_t r = 0; r < n; ++r) {
    const float fluence = 1.f + 0.01f * g(rng);
    for (int64_t c = 0; c < d; ++c)
      x[static_cast<size_t>(r * d + c)] = c % 17 == 5
                                              ? 0.f
                                              : 1e4f * std::exp(-static_cast<float>(c) / 40.f) * fluence + 3.f * u(rng);
  }
  Dataset ds(n, d, std::move(x));
  ds.source = "common pattern";
  return ds;
}

Dataset bright_spot_rows(int64_t n, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n * d));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < d; ++c)
      x[static_cast<size_t>(r * d + c)] = c < 16 ? 1e3f * (1.f + 1e-3f * g(rng)) : 3.f + 1.5f * g(rng);
  Dataset ds(n, d, std::move(x));
  ds.source = "bright spot";
  return ds;
}

Dataset one_far_row(int64_t n, int64_t d, uint64_t seed, int64_t far) {
  const Dataset normal = random_dataset(n, d, seed);
  std::vector<float> x(normal.data(), normal.data() + n * d);
  for (int64_t c = 0; c < d; ++c) x[static_cast<size_t>(far * d + c)] = 1e5f;
  Dataset ds(n, d, std::move(x));
  ds.source = "one far row";
  return ds;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const manifold::Error& e) {
    return e.what();
  }
  return "";
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string row_difference(const KnnGraph& a, const KnnGraph& b, int64_t i) {
  if (a.n != b.n || a.k != b.k) return "shapes differ";
  for (int j = 0; j < a.k; ++j) {
    const size_t at = static_cast<size_t>(i * a.k + j);
    if (a.indices[at] != b.indices[at] || a.distances[at] != b.distances[at])
      return "row " + std::to_string(i) + " position " + std::to_string(j) + ": (" + std::to_string(a.indices[at]) +
             ", " + std::to_string(a.distances[at]) + ") vs (" + std::to_string(b.indices[at]) + ", " +
             std::to_string(b.distances[at]) + ")";
  }
  return "";
}

std::string first_difference(const KnnGraph& a, const KnnGraph& b) {
  if (a.n != b.n || a.k != b.k) return "shapes differ";
  for (int64_t i = 0; i < a.n; ++i)
    if (std::string m = row_difference(a, b, i); !m.empty()) return m;
  return "";
}

Dataset ubiquitin_rotation_series(int64_t count, int size) {
  std::string pdb;
  try {
    pdb = find_packaged_pdb("1ubq");
  } catch (const Error&) {
    return Dataset();
  }
  DiffractionParams p;
  p.count = count, p.size = size, p.axis = "y";
  Progress quiet;
  DiffractionImages images = simulate_diffraction(read_pdb(pdb), p, quiet);
  Dataset ds(count, static_cast<int64_t>(size) * size, std::move(images.images));
  ds.source = "ubiquitin rotation series";
  return ds;
}

}  // namespace testing_support
