// Detector masks: reading them (.npy, .mrc, both CXI places and the CXI bit
// rule), finding them beside the data, refusing ones that do not fit, the
// session field, the simulator's hot pixels and gap, and the test:
// data with hot pixels and a gap embed exactly as the same data with those
// pixels removed, for the euclidean, cosine and correlation (pearson) metrics.
#include <gtest/gtest.h>

#include <hdf5.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/mask.h"
#include "manifold/npy.h"
#include "manifold/pdb.h"
#include "manifold/session.h"
#include "manifold/simulate.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
namespace fs = std::filesystem;

namespace {

/// An HDF5 file with the given datasets (intermediate groups created).
struct H5Set {
  std::string name;
  std::vector<hsize_t> dims;
  hid_t type;
  const void* data;
};
/// A .npy file of `descr` (any NumPy type string) and `shape` text holding
/// `data` as given: what npy::write does not write (bool, Fortran order,
/// big-endian).
void write_npy_as(const std::string& path, const std::string& descr, bool fortran, const std::string& shape,
                  const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  const std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                           ", 'shape': " + shape + ", }";
  const std::string header = dict + std::string((64 - (10 + dict.size() + 1) % 64) % 64, ' ') + "\n";
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header << data;
}

void write_h5(const std::string& path, const std::vector<H5Set>& sets) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  for (const H5Set& s : sets) {
    const hid_t space = H5Screate_simple(static_cast<int>(s.dims.size()), s.dims.data(), nullptr);
    const hid_t d = H5Dcreate2(file, s.name.c_str(), s.type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(d, 0) << s.name;
    ASSERT_GE(H5Dwrite(d, s.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data), 0);
    H5Dclose(d);
    H5Sclose(space);
  }
  H5Pclose(lcpl);
  H5Fclose(file);
}

/// A mode-0 (int8) MRC file of nz sections of ny x nx.
void write_mrc(const std::string& path, int32_t nx, int32_t ny, int32_t nz, const std::vector<int8_t>& values) {
  unsigned char h[1024] = {0};
  std::memcpy(h + 0, &nx, 4);
  std::memcpy(h + 4, &ny, 4);
  std::memcpy(h + 8, &nz, 4);
  std::memcpy(h + 208, "MAP ", 4);
  h[212] = 0x44, h[213] = 0x44;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(h), sizeof h);
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size()));
}

Dataset frames_of(int64_t n, int64_t h, int64_t w) {
  Dataset ds = random_dataset(n, h * w, 7);
  ds.item_shape = {h, w};
  ds.source = "frames.npy";
  return ds;
}

// ---- reading ---------------------------------------------------------------

TEST(Mask, CxiBitRuleAtBothPlaces) {
  TempDir t;
  // One pixel per bit: bits 0-4, 6, 7 and 9 make a pixel bad; 5 (peak mask),
  // 8 (resolution limit), 10 (noisy) and above describe a pixel that still measures.
  std::vector<uint32_t> bits(4 * 4, 0);
  for (int b = 0; b < 16; ++b) bits[static_cast<size_t>(b)] = 1u << b;
  const std::vector<float> data(2 * 16, 1.0f);
  write_h5(t / "a.cxi", {{"/entry_1/data_1/data", {2, 4, 4}, H5T_NATIVE_FLOAT, data.data()},
                         {"/entry_1/data_1/mask", {4, 4}, H5T_NATIVE_UINT32, bits.data()}});
  // The detector's place, with the bits stored as 16-bit integers.
  std::vector<uint16_t> bits16(bits.begin(), bits.end());
  write_h5(t / "b.cxi", {{"/entry_1/data_1/data", {2, 4, 4}, H5T_NATIVE_FLOAT, data.data()},
                         {"/entry_1/instrument_1/detector_1/mask", {4, 4}, H5T_NATIVE_UINT16, bits16.data()}});
  const std::vector<uint8_t> expected = {0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1};
  for (const char* name : {"a.cxi", "b.cxi"}) {
    const DetectorMask m = find_mask(t / name, "hdf5");
    EXPECT_EQ(m.valid, expected) << name;
    EXPECT_EQ(m.shape, (std::vector<int64_t>{4, 4}));
    EXPECT_EQ(m.valid_count(), 8);
    EXPECT_EQ(m.file, t / name);
    // read_mask (what --mask FILE.cxi does) reads the same.
    EXPECT_EQ(read_mask(t / name).valid, expected);
  }
  EXPECT_NE(find_mask(t / "a.cxi", "hdf5").source.find(":/entry_1/data_1/mask"), std::string::npos);
  EXPECT_NE(find_mask(t / "b.cxi", "hdf5").source.find(":/entry_1/instrument_1/detector_1/mask"), std::string::npos);
}

TEST(Mask, PerFrameCxiMaskKeepsPixelsValidInEveryFrame) {
  TempDir t;
  std::vector<uint32_t> bits(3 * 2 * 2, 0);
  bits[0 * 4 + 1] = 4;   // hot in frame 0
  bits[2 * 4 + 3] = 2;   // saturated in frame 2
  bits[1 * 4 + 2] = 32;  // in a peak mask: still valid
  const std::vector<float> data(3 * 4, 1.0f);
  write_h5(t / "p.cxi", {{"/entry_1/data_1/data", {3, 2, 2}, H5T_NATIVE_FLOAT, data.data()},
                         {"/entry_1/data_1/mask", {3, 2, 2}, H5T_NATIVE_UINT32, bits.data()}});
  const DetectorMask m = find_mask(t / "p.cxi", "hdf5");
  EXPECT_EQ(m.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(m.valid, (std::vector<uint8_t>{1, 0, 1, 0}));
}

TEST(Mask, NpyAndMrcNonZeroIsValid) {
  TempDir t;
  // bool, uint8 and int32: non-zero = valid, whatever the value.
  write_npy_as(t / "b.npy", "|b1", false, "(2, 3)", std::string("\1\0\1\1\1\0", 6));
  EXPECT_EQ(read_mask(t / "b.npy").valid, (std::vector<uint8_t>{1, 0, 1, 1, 1, 0}));
  const std::vector<uint8_t> u8 = {0, 255, 1, 0, 7, 1};
  npy::write(t / "u.npy", u8.data(), {2, 3});
  const DetectorMask u = read_mask(t / "u.npy");
  EXPECT_EQ(u.valid, (std::vector<uint8_t>{0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(u.shape, (std::vector<int64_t>{2, 3}));
  const std::vector<int32_t> i32 = {-1, 0, 2, 0, 0, 3};
  npy::write(t / "i.npy", i32.data(), {2, 3});
  EXPECT_EQ(read_mask(t / "i.npy").valid, (std::vector<uint8_t>{1, 0, 1, 0, 0, 1}));
  // A stack of masks: valid where every layer is.
  const std::vector<uint8_t> stack = {1, 1, 0, 1, 1, 1, /**/ 1, 0, 1, 1, 1, 1};
  npy::write(t / "s.npy", stack.data(), {2, 2, 3});
  EXPECT_EQ(read_mask(t / "s.npy").valid, (std::vector<uint8_t>{1, 0, 0, 1, 1, 1}));
  // The same stack as np.save writes it transposed back (Fortran order) and
  // big-endian: the same mask.
  std::string big_fortran;  // element (l, y, x) at l + 2 (y + 2 x), each as two big-endian bytes
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 2; ++y)
      for (int l = 0; l < 2; ++l) {
        big_fortran += '\0';
        big_fortran += static_cast<char>(stack[static_cast<size_t>(l * 6 + y * 3 + x)] ? 3 : 0);
      }
  write_npy_as(t / "sf.npy", ">i2", true, "(2, 2, 3)", big_fortran);
  const DetectorMask sf = read_mask(t / "sf.npy");
  EXPECT_EQ(sf.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sf.valid, (std::vector<uint8_t>{1, 0, 0, 1, 1, 1}));
  // A mask of no pixels (or no layers) is refused: read as no mask, it was
  // dropped without a word.
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 0}, std::vector<int64_t>{0, 2, 3}}) {
    npy::write(t / "empty.npy", u8.data(), shape);
    try {
      read_mask(t / "empty.npy");
      ADD_FAILURE() << "an empty mask was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("holds no pixels"), std::string::npos) << e.what();
    }
  }
  // MRC, one section and a stack of two.
  write_mrc(t / "m.mrc", 3, 2, 1, {1, 0, 1, 1, 1, 0});
  const DetectorMask m = read_mask(t / "m.mrc");
  EXPECT_EQ(m.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m.valid, (std::vector<uint8_t>{1, 0, 1, 1, 1, 0}));
  write_mrc(t / "m2.mrc", 3, 2, 2, {1, 0, 1, 1, 1, 0, /**/ 1, 1, 1, 0, 1, 1});
  EXPECT_EQ(read_mask(t / "m2.mrc").valid, (std::vector<uint8_t>{1, 0, 1, 0, 1, 0}));
}

TEST(Mask, BadMasksAreOneLineNamingTheFile) {
  TempDir t;
  const Dataset frames = frames_of(20, 4, 5);
  const std::vector<uint8_t> wrong(4 * 4, 1), none(4 * 5, 0);
  npy::write(t / "wrong.npy", wrong.data(), {4, 4});
  npy::write(t / "none.npy", none.data(), {4, 5});
  { std::ofstream(t / "junk.npy") << "not a numpy file"; }
  const std::vector<float> f(4 * 5, 0.0f);
  write_h5(t / "nomask.h5", {{"/x", {4, 5}, H5T_NATIVE_FLOAT, f.data()}});
  auto message = [&](const std::string& option) {
    try {
      mask_for("frames.npy", option, frames);
    } catch (const UsageError& e) {
      return std::string(e.what());
    } catch (const Error& e) {
      return "not a UsageError: " + std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string w = message(t / "wrong.npy");
  EXPECT_NE(w.find("wrong.npy: mask of shape 4x4 does not fit the frames of frames.npy (4x5)"), std::string::npos) << w;
  EXPECT_NE(message(t / "none.npy").find("none.npy: the mask leaves no pixel valid"), std::string::npos);
  EXPECT_EQ(message(t / "junk.npy").rfind(t / "junk.npy", 0), 0u) << message(t / "junk.npy");
  EXPECT_NE(message(t / "missing.npy").find("missing.npy: no such mask file"), std::string::npos);
  EXPECT_NE(message(t / "nomask.h5").find("holds no CXI mask"), std::string::npos);
  EXPECT_NE(message(t / "x.txt").find("x.txt"), std::string::npos);
  for (const std::string& m : {w, message(t / "junk.npy"), message(t / "nomask.h5")}) EXPECT_EQ(count_lines(m), 0) << m;

  // On the command line: exit 2, one line, nothing written.
  Dataset ds = frames_of(20, 4, 5);
  npy::write(t / "d.npy", ds.data(), {20, 4, 5});
  for (const char* bad : {"wrong.npy", "none.npy", "junk.npy"}) {
    std::string err;
    EXPECT_EQ(run_cli("knn " + (t / "d.npy") + " -k 3 --backend cpu --mask " + (t / bad) + " -o " + (t / "g") + " -q",
                      &err),
              2)
        << bad << ": " << err;
    EXPECT_EQ(count_lines(err), 1) << err;
    EXPECT_NE(err.find(bad), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(t / "g"));
  }
  // A mask found beside the data that does not fit names itself and the way out.
  npy::write(t / "d.mask.npy", wrong.data(), {4, 4});
  std::string err;
  EXPECT_EQ(run_cli("knn " + (t / "d.npy") + " -k 3 --backend cpu -o " + (t / "g") + " -q", &err), 2) << err;
  EXPECT_NE(err.find("d.mask.npy: mask of shape 4x4"), std::string::npos) << err;
  EXPECT_NE(err.find("--mask none"), std::string::npos) << err;
  EXPECT_EQ(run_cli("knn " + (t / "d.npy") + " -k 3 --backend cpu --mask none -o " + (t / "g") + " -q", &err), 0)
      << err;
}

TEST(Mask, FoundBesideTheDataOrTheFolder) {
  TempDir t;
  const std::vector<uint8_t> m = {1, 0, 1, 1};
  npy::write(t / "x.mask.npy", m.data(), {2, 2});
  for (const char* data : {"x.npy", "x.mrcs", "x.tif", "x"}) {
    if (std::string(data) == "x") fs::create_directory(t / "x");
    const DetectorMask found = find_mask(t / data, "npy");
    EXPECT_EQ(found.valid, m) << data;
    EXPECT_EQ(found.file, t / "x.mask.npy") << data;
  }
  EXPECT_TRUE(find_mask(t / "y.npy", "npy").empty());
  // "none" leaves a mask beside the data out.
  const Dataset frames = frames_of(3, 2, 2);
  EXPECT_TRUE(mask_for(t / "x.npy", "none", frames).empty());
  EXPECT_EQ(mask_for(t / "x.npy", "", frames).valid_count(), 3);
}

// ---- features and transforms --------------------------------------------------

TEST(Mask, FeaturesAreTheValidPixelsInOrder) {
  const Dataset frames = frames_of(5, 3, 4);
  DetectorMask m;
  m.shape = {3, 4};
  m.valid = {1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0};
  m.source = m.file = "m.npy";
  const Dataset f = masked_features(frames, m);
  ASSERT_EQ(f.rows(), 5);
  ASSERT_EQ(f.cols(), 8);
  const std::vector<int> kept = {0, 2, 3, 6, 7, 8, 9, 10};
  for (int64_t i = 0; i < 5; ++i)
    for (size_t j = 0; j < kept.size(); ++j) EXPECT_EQ(f.row(i)[j], frames.row(i)[kept[j]]);
  EXPECT_EQ(mask_summary(m), "mask: 8 of 12 pixels valid (66.7%) from m.npy");
  // An all-valid mask leaves the frames as they are (no copy).
  m.valid.assign(12, 1);
  EXPECT_EQ(masked_features(frames, m).data(), frames.data());
}

TEST(Mask, BinnedPixelIsValidOnlyWhenAllItsPixelsAre) {
  DetectorMask m;
  m.shape = {4, 4};
  m.valid.assign(16, 1);
  m.valid[5] = 0;   // (1, 1): bin (0, 0)
  m.valid[15] = 0;  // (3, 3): bin (1, 1)
  m.source = "m.npy";
  const DetectorMask b = transformed_mask(m, "anscombe+bin2");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(b.valid, (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(transformed_mask(m, "anscombe").valid, m.valid);
  EXPECT_EQ(transformed_mask(m, "bin4").valid, (std::vector<uint8_t>{0}));
  EXPECT_TRUE(transformed_mask(DetectorMask{}, "bin2").empty());
}

// ---- sessions --------------------------------------------------------------

TEST(Mask, SessionRoundTrip) {
  Session s;
  s.data = "d.npy";
  s.mask = "det.mask.npy";
  Session back = session_from_json(session_to_json(s), "/base", "s.json");
  EXPECT_EQ(back.mask, "/base/det.mask.npy");  // relative to the session, like "data"
  s.mask = "none";
  EXPECT_EQ(session_from_json(session_to_json(s), "/base", "s.json").mask, "none");
  s.mask.clear();
  EXPECT_FALSE(session_to_json(s).contains("mask"));
  EXPECT_EQ(session_from_json(session_to_json(s), "/base", "s.json").mask, "");
  nlohmann::json bad = session_to_json(s);
  bad["mask"] = 3;
  EXPECT_NE(message_of([&] { session_from_json(bad, "", "s.json"); }).find("s.json: \"mask\""), std::string::npos);
}

// ---- the simulator and the test -----------------------------------------

std::string ubiquitin_path() {
  try {
    return find_packaged_pdb("1ubq");
  } catch (const Error&) {
    return "";
  }
}

DiffractionImages defective_patterns(int64_t count, int size, int64_t hot, int gap) {
  DiffractionParams p;
  p.count = count;
  p.size = size;
  p.photons = 1e4;
  p.hot_pixels = hot;
  p.gap = gap;
  p.seed = 5;
  Progress progress;
  return simulate_diffraction(read_pdb(ubiquitin_path()), p, progress);
}

TEST(Mask, SimulatorWritesAMaskMatchingItsHotPixelsAndGap) {
  if (ubiquitin_path().empty()) GTEST_SKIP() << "no 1ubq.pdb";
  TempDir t;
  const int S = 16, gap = 2;
  const DiffractionImages d = defective_patterns(40, S, 5, gap);
  ASSERT_EQ(d.pixel_mask.size(), static_cast<size_t>(S * S));
  write_diffraction(t / "sim.npy", d);
  write_diffraction(t / "sim.cxi", d);
  const DetectorMask beside = find_mask(t / "sim.npy", "npy");
  const DetectorMask inside = find_mask(t / "sim.cxi", "hdf5");
  EXPECT_EQ(beside.valid, inside.valid);
  EXPECT_EQ(beside.valid_count(), (S - gap) * (S - gap) - 5);
  // Also at the detector's place in the CXI file.
  EXPECT_EQ(read_mask(t / "sim.cxi").valid, beside.valid);
  float brightest_valid = 0;
  for (int64_t i = 0; i < d.count; ++i)
    for (int k = 0; k < S * S; ++k)
      if (beside.valid[static_cast<size_t>(k)])
        brightest_valid = std::max(brightest_valid, d.images[static_cast<size_t>(i * S * S + k)]);
  int hot = 0;
  for (int r = 0; r < S; ++r)
    for (int c = 0; c < S; ++c) {
      const size_t k = static_cast<size_t>(r * S + c);
      const bool in_gap = (r >= (S - gap) / 2 && r < (S - gap) / 2 + gap) ||
                          (c >= (S - gap) / 2 && c < (S - gap) / 2 + gap);
      EXPECT_EQ(d.pixel_mask[k] == 1, in_gap) << r << "," << c;
      if (d.pixel_mask[k] == 4) ++hot;
      for (int64_t i = 0; i < d.count; ++i) {
        const float v = d.images[static_cast<size_t>(i * S * S) + k];
        if (in_gap) {
          EXPECT_EQ(v, 0.0f);
        }
        if (d.pixel_mask[k] == 4) {
          EXPECT_GE(v, 100 * brightest_valid);
        }
      }
    }
  EXPECT_EQ(hot, 5);
}

/// The graph of DATA and its embedding by `manifold run` with `extra` options.
struct RunResult {
  KnnGraph graph;
  std::vector<double> eigenvalues;
};
RunResult run_on(const std::string& data, const std::string& out, const std::string& metric,
                 const std::string& extra = "") {
  std::string err;
  const int rc = run_cli("run " + data + " -k 12 --metric " + metric + " --backend cpu --components 4 " + extra +
                             " -o " + out + " -q",
                         &err);
  EXPECT_EQ(rc, 0) << err;
  RunResult r;
  r.graph = read_graph(out);
  r.eigenvalues = npy::read<double>(out + "/eigenvalues.npy");
  return r;
}

TEST(Mask, HotPixelsAndGapEmbedAsTheDataWithoutThem) {
  if (ubiquitin_path().empty()) GTEST_SKIP() << "no 1ubq.pdb";
  TempDir t;
  const int S = 20;
  const DiffractionImages d = defective_patterns(300, S, 6, 2);
  write_diffraction(t / "sim.npy", d);  // with sim.mask.npy beside
  // The same patterns with the hot pixels and the gap removed, by the simulator's own bits.
  std::vector<float> clean;
  int64_t kept = 0;
  for (int k = 0; k < S * S; ++k) kept += d.pixel_mask[static_cast<size_t>(k)] == 0;
  for (int64_t i = 0; i < d.count; ++i)
    for (int k = 0; k < S * S; ++k)
      if (d.pixel_mask[static_cast<size_t>(k)] == 0) clean.push_back(d.images[static_cast<size_t>(i * S * S + k)]);
  npy::write(t / "clean.npy", clean.data(), {d.count, kept});
  const Dataset clean_ds = load_dataset(t / "clean.npy");

  for (const std::string metric : {"euclidean", "cosine", "pearson"}) {  // pearson: the correlation metric
    SCOPED_TRACE(metric);
    const RunResult masked = run_on(t / "sim.npy", t / ("m_" + metric), metric);
    const RunResult removed = run_on(t / "clean.npy", t / ("c_" + metric), metric);
    EXPECT_EQ(masked.graph.d, kept);
    EXPECT_TRUE(masked.graph.extra.contains("mask"));
    EXPECT_EQ(masked.graph.extra["mask"]["valid"], kept);
    EXPECT_EQ(masked.graph.extra["mask"]["file"], fs::absolute(t / "sim.mask.npy").lexically_normal().string());
    EXPECT_EQ(masked.graph.indices, removed.graph.indices);
    ASSERT_EQ(masked.graph.distances.size(), removed.graph.distances.size());
    for (size_t e = 0; e < masked.graph.distances.size(); ++e)
      ASSERT_NEAR(masked.graph.distances[e], removed.graph.distances[e],
                  1e-5 * (1 + std::abs(removed.graph.distances[e])));
    // Both are the exact graph of the data without those pixels.
    EXPECT_EQ(check_graph(masked.graph, clean_ds, brute_force(clean_ds, 12, parse_metric(metric), false)), "");
    ASSERT_EQ(masked.eigenvalues.size(), removed.eigenvalues.size());
    for (size_t c = 0; c < masked.eigenvalues.size(); ++c)
      EXPECT_NEAR(masked.eigenvalues[c], removed.eigenvalues[c], 1e-9);
    // Without the mask the hot pixels decide the graph: the test can fail.
    const RunResult unmasked = run_on(t / "sim.npy", t / ("u_" + metric), metric, "--mask none");
    EXPECT_NE(unmasked.graph.indices, removed.graph.indices);
  }
}

TEST(Mask, RunRecordsTheMaskAndItsSessionReplaysIt) {
  if (ubiquitin_path().empty()) GTEST_SKIP() << "no 1ubq.pdb";
  TempDir t;
  const DiffractionImages d = defective_patterns(120, 16, 4, 2);
  write_diffraction(t / "sim.npy", d);
  std::string err, out;
  // info names the mask it finds beside the data.
  ASSERT_EQ(run_cli("info " + (t / "sim.npy"), &err, &out), 0) << err;
  EXPECT_NE(out.find("mask:    192 of 256 pixels valid (75.0%) from " + (t / "sim.mask.npy")), std::string::npos)
      << out;
  // The mask under another name, given with --mask (nothing is found beside the data).
  fs::rename(t / "sim.mask.npy", t / "detector.npy");
  ASSERT_EQ(run_cli("info " + (t / "sim.npy"), &err, &out), 0) << err;
  EXPECT_EQ(out.find("mask:"), std::string::npos) << out;
  ASSERT_EQ(run_cli("run " + (t / "sim.npy") + " -k 8 --backend cpu --transform anscombe --mask " +
                        (t / "detector.npy") + " -o " + (t / "a"),
                    &err, &out),
            0)
      << err;
  EXPECT_NE(out.find("mask: 192 of 256 pixels valid (75.0%) from " + (t / "detector.npy")), std::string::npos) << out;
  const Session s = read_session(t / "a/session.json");
  EXPECT_EQ(s.mask, t / "detector.npy");
  const KnnGraph a = read_graph(t / "a");
  EXPECT_EQ(a.d, 192);
  ASSERT_EQ(run_cli("run --session " + (t / "a/session.json") + " -o " + (t / "b") + " -q", &err), 0) << err;
  const KnnGraph b = read_graph(t / "b");
  EXPECT_EQ(first_difference(a, b), "");
  EXPECT_EQ(b.extra["mask"]["valid"], 192);
  EXPECT_EQ(npy::read<double>(t / "a/eigenvalues.npy"), npy::read<double>(t / "b/eigenvalues.npy"));
  // --mask belongs to DATA runs.
  EXPECT_EQ(run_cli("run --session " + (t / "a/session.json") + " --mask none -o " + (t / "c") + " -q", &err), 2);
  EXPECT_NE(err.find("--mask"), std::string::npos) << err;
}

}  // namespace
