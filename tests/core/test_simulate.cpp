// The diffraction simulator: form factors, PDB parsing, the scattering sum
// against a direct evaluation, Friedel symmetry, noise statistics, writers,
// and the physical validation of the diffusion map: patterns of ubiquitin
// rotated about one axis embed on a circle that tracks the angle.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "manifold/dataset.h"
#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "manifold/knn.h"
#include "manifold/npy.h"
#include "manifold/pdb.h"
#include "manifold/simulate.h"
#include "test_support.h"

using namespace manifold;
using testing_support::message_of;
using testing_support::TempDir;

namespace {

std::string ubiquitin_path() {
  try {
    return find_packaged_pdb("1ubq");
  } catch (const Error&) {
    return "";
  }
}

#define REQUIRE_UBIQUITIN(path)              \
  const std::string path = ubiquitin_path(); \
  if (path.empty()) GTEST_SKIP() << "freesasa (1ubq.pdb) is not installed"

TEST(FormFactors, ForwardScatteringEqualsTheElectronCount) {
  const std::map<std::string, int> z = {{"H", 1},   {"C", 6},   {"N", 7},   {"O", 8},   {"Na", 11}, {"Mg", 12},
                                        {"P", 15},  {"S", 16},  {"Cl", 17}, {"K", 19},  {"Ca", 20}, {"Mn", 25},
                                        {"Fe", 26}, {"Co", 27}, {"Ni", 28}, {"Cu", 29}, {"Zn", 30}, {"Se", 34}};
  EXPECT_EQ(cromer_mann_table().size(), z.size());
  for (const auto& [el, protons] : z) {
    const CromerMann* f = cromer_mann(el);
    ASSERT_NE(f, nullptr) << el;
    EXPECT_NEAR((*f)(0.0), protons, 0.02) << el;
    // Decreasing with angle, and small but positive at 2 / Angstrom.
    double prev = (*f)(0.0);
    for (double s = 0.05; s <= 2.0; s += 0.05) {
      const double v = (*f)(s);
      EXPECT_LT(v, prev) << el << " s=" << s;
      EXPECT_GT(v, 0) << el << " s=" << s;
      prev = v;
    }
  }
  // Tabulated values (International Tables Vol. C, Table 6.1.1.1) at sin(theta)/lambda = 0.5.
  EXPECT_NEAR((*cromer_mann("C"))(0.5), 1.69, 0.01);
  EXPECT_NEAR((*cromer_mann("O"))(0.5), 2.34, 0.01);
  EXPECT_NE(cromer_mann("FE"), nullptr);
  EXPECT_EQ(cromer_mann("Xx"), nullptr);
}

TEST(Pdb, ReadsUbiquitin) {
  REQUIRE_UBIQUITIN(path);
  Molecule m = read_pdb(path);
  EXPECT_EQ(m.atoms.size(), 602u);  // 76 residues, no hydrogens; waters dropped
  EXPECT_EQ(m.id, "1UBQ");
  std::map<std::string, int> count;
  for (auto& a : m.atoms) ++count[a.element];
  EXPECT_EQ(count.size(), 4u);
  EXPECT_EQ(count["S"], 1);  // one methionine
  EXPECT_NEAR(m.atoms[0].x, 27.340, 1e-12);
  EXPECT_NEAR(m.atoms[0].y, 24.430, 1e-12);
  EXPECT_NEAR(m.atoms[0].z, 2.614, 1e-12);
  EXPECT_EQ(m.atoms[0].name, "N");
  EXPECT_EQ(m.atoms[0].residue, "MET");
  PdbOptions keep;
  keep.keep_water = true;
  EXPECT_EQ(read_pdb(path, keep).atoms.size(), 602u + 58u);
}

TEST(Pdb, BadFilesGiveOneLine) {
  TempDir t;
  EXPECT_NE(message_of([&] { read_pdb(t / "missing.pdb"); }).find("missing.pdb: cannot open"), std::string::npos);
  EXPECT_NE(message_of([&] { parse_pdb("hello\nworld\n", "x.pdb"); }).find("x.pdb: no ATOM/HETATM"), std::string::npos);
  const std::string good = "ATOM      1  N   MET A   1      27.340  24.430   2.614  1.00  9.67           N  \n";
  const std::string bad = "ATOM      2  CA  MET A   1      26.2x6  25.413   2.842  1.00 10.38           C  \n";
  const std::string msg = message_of([&] { parse_pdb(good + bad, "y.pdb"); });
  EXPECT_NE(msg.find("y.pdb:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x coordinate"), std::string::npos) << msg;
  EXPECT_NE(message_of([&] { parse_pdb("ATOM      1  N   MET A   1      27.340\n", "z.pdb"); }).find("z.pdb:1: "),
            std::string::npos);
  // The element comes from the atom name when columns 77-78 are blank.
  Molecule m = parse_pdb("HETATM    1 FE   HEM A   1       1.000   2.000   3.000  1.00  0.00\n", "h.pdb");
  ASSERT_EQ(m.atoms.size(), 1u);
  EXPECT_EQ(m.atoms[0].element, "Fe");
  Molecule u = parse_pdb("HETATM    1  U   URA A   1       1.000   2.000   3.000  1.00  0.00           U  \n", "u.pdb");
  DiffractionParams p;
  p.count = 2;
  Progress progress;
  EXPECT_NE(message_of([&] { simulate_diffraction(u, p, progress); }).find("element 'U'"), std::string::npos);
  // nan and inf parse as numbers but place no atom: refused, not simulated.
  const std::string nan_x = "ATOM      2  CA  MET A   1         nan  25.413   2.842  1.00 10.38           C  \n";
  EXPECT_NE(message_of([&] { parse_pdb(good + nan_x, "n.pdb"); }).find("n.pdb:2: bad x coordinate 'nan'"),
            std::string::npos);
  const std::string inf_z = "ATOM      2  CA  MET A   1      26.266  25.413    -inf  1.00 10.38           C  \n";
  EXPECT_NE(message_of([&] { parse_pdb(good + inf_z, "i.pdb"); }).find("i.pdb:2: bad z coordinate '-inf'"),
            std::string::npos);
  const std::string nan_occupancy =
      "ATOM      2  CA  MET A   1      26.266  25.413   2.842   nan 10.38           C  \n";
  EXPECT_NE(message_of([&] { parse_pdb(good + nan_occupancy, "o.pdb"); }).find("bad occupancy"), std::string::npos);
  // A file name with a newline and a terminal escape is printed escaped.
  const std::string shown = message_of([&] { parse_pdb("hello\n", "a\nb\x1b[31m.pdb"); });
  EXPECT_EQ(shown.rfind("\"a\\nb\\x1b[31m.pdb\": no ATOM", 0), 0u) << shown;
}

/// I at pixel (r, c) by the direct sum over atoms, independently of the simulator's factorisation.
double direct_intensity(const Molecule& m, const double* quat, int S, double q_max, int r, int c) {
  const double w = quat[0], x = quat[1], y = quat[2], z = quat[3];
  const double R[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                          {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                          {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
  const double dq = 2 * q_max / S;
  const double qx = (c - (S - 1) / 2.0) * dq, qy = (r - (S - 1) / 2.0) * dq;
  const double s = std::hypot(qx, qy) / (4 * M_PI);
  std::complex<double> a = 0;
  for (auto& at : m.atoms) {
    const double rx = R[0][0] * at.x + R[0][1] * at.y + R[0][2] * at.z;
    const double ry = R[1][0] * at.x + R[1][1] * at.y + R[1][2] * at.z;
    a += at.occupancy * (*cromer_mann(at.element))(s)*std::polar(1.0, qx * rx + qy * ry);
  }
  return std::norm(a);
}

TEST(Diffraction, MatchesTheDirectScatteringSum) {
  REQUIRE_UBIQUITIN(path);
  Molecule m = read_pdb(path);
  for (std::string axis : {"x", "z", "random"}) {
    DiffractionParams p;
    p.count = 4;
    p.size = 24;
    p.axis = axis;
    p.photons = 0;
    p.seed = 5;
    Progress progress;
    DiffractionImages d = simulate_diffraction(m, p, progress);
    ASSERT_EQ(d.images.size(), 4u * 24 * 24);
    for (int64_t i = 0; i < p.count; ++i)
      for (int r = 0; r < p.size; r += 5)
        for (int c = 0; c < p.size; c += 3) {
          const double ref = direct_intensity(m, d.quaternions.data() + i * 4, p.size, p.q_max, r, c);
          EXPECT_NEAR(d.images[i * 576 + r * 24 + c], ref, 1e-5 * ref + 1e-3)
              << axis << " " << i << " " << r << "," << c;
        }
    // Friedel: I(q) = I(-q), pixel (r, c) <-> (S-1-r, S-1-c).
    for (int64_t i = 0; i < p.count; ++i)
      for (int r = 0; r < 24; ++r)
        for (int c = 0; c < 24; ++c) {
          const float a = d.images[i * 576 + r * 24 + c], b = d.images[i * 576 + (23 - r) * 24 + (23 - c)];
          ASSERT_NEAR(a, b, 1e-5f * a) << r << "," << c;
        }
    for (int64_t i = 0; i < p.count; ++i) {
      const double* q = d.quaternions.data() + i * 4;
      EXPECT_NEAR(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3], 1.0, 1e-12);
      EXPECT_GE(q[0], 0);
      if (axis != "random") {
        EXPECT_NEAR(q[0], std::abs(std::cos(d.angles[i] / 2)), 1e-12);
        EXPECT_EQ(q[axis == "x" ? 1 : 3] == 0, std::sin(d.angles[i] / 2) == 0);
      }
    }
  }
  // Two atoms: I = f^2 (2 + 2 cos(q . dr)) exactly.
  Molecule two;
  two.source = "two";
  Atom c0;
  c0.element = "C";
  two.atoms.push_back(c0);
  c0.x = 7.5;
  two.atoms.push_back(c0);
  DiffractionParams p;
  p.count = 1;
  p.size = 16;
  p.photons = 0;
  p.axis = "z";
  Progress progress;
  DiffractionImages d = simulate_diffraction(two, p, progress);
  const double a = d.angles[0], dq = 2 * p.q_max / p.size;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      const double qx = (c - 7.5) * dq, qy = (r - 7.5) * dq;
      const double f = (*cromer_mann("C"))(std::hypot(qx, qy) / (4 * M_PI));
      const double phase = 7.5 * (qx * std::cos(a) + qy * std::sin(a));
      EXPECT_NEAR(d.images[r * 16 + c], f * f * (2 + 2 * std::cos(phase)), 1e-4);
    }
}

TEST(Diffraction, PoissonNoiseAtTheRequestedFluence) {
  REQUIRE_UBIQUITIN(path);
  Molecule m = read_pdb(path);
  DiffractionParams p;
  p.count = 300;
  p.size = 32;
  p.photons = 20000;
  p.seed = 9;
  Progress progress;
  DiffractionImages d = simulate_diffraction(m, p, progress);
  double total = 0;
  for (float v : d.images) {
    ASSERT_EQ(v, std::floor(v));
    ASSERT_GE(v, 0);
    total += v;
  }
  // The mean photon count per pattern is P to within Poisson and orientation spread.
  EXPECT_NEAR(total / p.count, p.photons, 0.01 * p.photons);
  // Noise-free intensities at the same seed: counts scatter around scale * I with variance = mean.
  DiffractionParams clean = p;
  clean.photons = 0;
  DiffractionImages c = simulate_diffraction(m, clean, progress);
  EXPECT_EQ(c.quaternions, d.quaternions);
  double chi2 = 0;
  int64_t cells = 0;
  for (size_t k = 0; k < c.images.size(); ++k) {
    const double mean = d.scale * c.images[k];
    if (mean < 5) continue;
    chi2 += (d.images[k] - mean) * (d.images[k] - mean) / mean;
    ++cells;
  }
  ASSERT_GT(cells, 10000);
  EXPECT_NEAR(chi2 / cells, 1.0, 0.05);
}

TEST(Diffraction, DeterministicWhateverTheThreads) {
  REQUIRE_UBIQUITIN(path);
  Molecule m = read_pdb(path);
  DiffractionParams p;
  p.count = 40;
  p.size = 16;
  p.axis = "random";
  p.threads = 1;
  Progress progress;
  DiffractionImages a = simulate_diffraction(m, p, progress);
  p.threads = 2;
  DiffractionImages b = simulate_diffraction(m, p, progress);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.quaternions, b.quaternions);
  p.seed = 2;
  DiffractionImages c = simulate_diffraction(m, p, progress);
  EXPECT_NE(a.images, c.images);
}

TEST(Diffraction, RandomRotationsAreUniform) {
  Molecule one;
  one.source = "one";
  Atom c0;
  c0.element = "C";
  one.atoms.push_back(c0);
  DiffractionParams p;
  p.count = 20000;
  p.size = 2;
  p.axis = "random";
  p.photons = 0;
  Progress progress;
  DiffractionImages d = simulate_diffraction(one, p, progress);
  // R e_z over uniform rotations is uniform on the sphere: mean 0, second moment I/3.
  double m[3] = {0, 0, 0}, mm[3][3] = {};
  for (int64_t i = 0; i < p.count; ++i) {
    const double* q = d.quaternions.data() + i * 4;
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    const double v[3] = {2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)};
    for (int a = 0; a < 3; ++a) {
      m[a] += v[a] / p.count;
      for (int b = 0; b < 3; ++b) mm[a][b] += v[a] * v[b] / p.count;
    }
  }
  for (int a = 0; a < 3; ++a) {
    EXPECT_NEAR(m[a], 0, 0.02);
    for (int b = 0; b < 3; ++b) EXPECT_NEAR(mm[a][b], a == b ? 1.0 / 3 : 0.0, 0.02);
  }
}

TEST(Diffraction, BadParametersGiveOneLine) {
  DiffractionParams p;
  p.axis = "w";
  EXPECT_NE(message_of([&] { validate(p); }).find("--axis"), std::string::npos);
  p = {};
  p.count = 0;
  EXPECT_NE(message_of([&] { validate(p); }).find("--count"), std::string::npos);
  p = {};
  p.size = 1;
  EXPECT_NE(message_of([&] { validate(p); }).find("--size"), std::string::npos);
  p = {};
  p.photons = -1;
  EXPECT_NE(message_of([&] { validate(p); }).find("--photons"), std::string::npos);
}

TEST(Diffraction, WritersRoundTrip) {
  REQUIRE_UBIQUITIN(path);
  Molecule m = read_pdb(path);
  DiffractionParams p;
  p.count = 12;
  p.size = 20;
  p.axis = "z";
  Progress progress;
  DiffractionImages d = simulate_diffraction(m, p, progress);
  TempDir t;
  write_diffraction(t / "set.npy", d);
  std::vector<int64_t> shape;
  EXPECT_EQ(npy::read<float>(t / "set.npy", &shape), d.images);
  EXPECT_EQ(shape, (std::vector<int64_t>{12, 20, 20}));
  EXPECT_EQ(npy::read<double>(t / "set.angles.npy", &shape), d.angles);
  EXPECT_TRUE(std::filesystem::exists(t / "set.json"));
  Dataset back = load_dataset(t / "set.npy");
  EXPECT_EQ(back.rows(), 12);
  EXPECT_EQ(back.cols(), 400);

  p.axis = "random";
  DiffractionImages r = simulate_diffraction(m, p, progress);
  write_diffraction(t / "set.cxi", r);
  Dataset cxi = load_dataset(t / "set.cxi");
  ASSERT_EQ(cxi.rows(), 12);
  ASSERT_EQ(cxi.cols(), 400);
  for (int64_t k = 0; k < 12 * 400; ++k) ASSERT_EQ(cxi.data()[k], r.images[k]);
  ReadOptions ro;
  ro.hdf5_dataset = "/entry_1/sample_1/orientation_quaternion";
  Dataset q = load_dataset(t / "set.cxi", ro);
  ASSERT_EQ(q.rows(), 12);
  ASSERT_EQ(q.cols(), 4);
  for (int64_t k = 0; k < 48; ++k) EXPECT_NEAR(q.data()[k], r.quaternions[k], 1e-7);
  ro.hdf5_dataset = "/entry_1/instrument_1/detector_1/data";
  EXPECT_EQ(load_dataset(t / "set.cxi", ro).rows(), 12);

  // A bad extension writes nothing.
  EXPECT_THROW(write_diffraction(t / "set.txt", r), UsageError);
  EXPECT_FALSE(std::filesystem::exists(t / "set.txt"));
  // An unwritable place leaves nothing behind either.
  EXPECT_THROW(write_diffraction(t / "set.npy/inner.npy", r), Error);
}

/// The largest |Fisher-Lee correlation| of atan2(psi_2, psi_1) with the angle
/// or twice the angle (Friedel symmetry folds rotations about the beam).
double angle_recovery(const DiffusionResult& r, const std::vector<double>& angles, double* with_twice = nullptr) {
  std::vector<double> phi, truth, twice;
  const int nev = r.m + 1;
  for (int64_t e = 0; e < r.n; ++e) {
    phi.push_back(std::atan2(r.psi[e * nev + 2], r.psi[e * nev + 1]));
    truth.push_back(angles[r.point_index[e]]);
    twice.push_back(2 * angles[r.point_index[e]]);
  }
  const double a = std::abs(circular_correlation(phi, truth)), b = std::abs(circular_correlation(phi, twice));
  if (with_twice) *with_twice = b;
  return std::max(a, b);
}

class PhysicalValidation : public ::testing::TestWithParam<std::string> {};

TEST_P(PhysicalValidation, RotationAboutOneAxisEmbedsOnACircle) {
  REQUIRE_UBIQUITIN(path);
  Molecule m = read_pdb(path);
  DiffractionParams p;
  // Under the sanitizers 500 patterns, 0.72 degrees apart: the circle and
  // its angle stay as clear (correlations above 0.996 on every axis).
  p.count = testing_support::scaled(1200, 500);
  p.size = 32;
  p.axis = GetParam();
  p.photons = 1e5;
  p.seed = 3;
  Progress progress;
  DiffractionImages d = simulate_diffraction(m, p, progress);
  register_cpu_backend();
  KnnParams kp;
  kp.k = 20;
  DiffusionParams dp;
  dp.components = 4;
  auto embed = [&](bool stabilise) {
    std::vector<float> v = d.images;
    if (stabilise) anscombe_transform(v.data(), static_cast<int64_t>(v.size()));
    Dataset ds(p.count, p.size * p.size, std::move(v));
    KnnGraph g = make_backend("cpu")->build(ds, kp, progress);
    return diffusion_map(g, dp, progress);
  };
  // Photon counts are variance-stabilised first: raw counts let the noise of
  // the bright centre dominate the distances (printed for the record).
  DiffusionResult r = embed(true);
  ASSERT_EQ(r.graph_components, 1);
  double twice = 0;
  const double c = angle_recovery(r, d.angles, &twice);
  double raw_twice = 0;
  const double raw = angle_recovery(embed(false), d.angles, &raw_twice);
  std::printf(
      "axis %s: circular correlation %.5f (against twice the angle %.5f; raw counts %.5f), eigenvalues %.6f %.6f "
      "%.6f\n",
      p.axis.c_str(), c, twice, raw, r.eigenvalues[1], r.eigenvalues[2], r.eigenvalues[3]);
  EXPECT_GE(c, 0.99);
  // About the beam, Friedel symmetry makes the patterns repeat every pi: psi traces twice the angle.
  if (p.axis == "z") EXPECT_GE(twice, 0.99);
  else
    EXPECT_LT(twice, 0.5);
}

INSTANTIATE_TEST_SUITE_P(Ubiquitin, PhysicalValidation, ::testing::Values("x", "y", "z"));

}  // namespace
