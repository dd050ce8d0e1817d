// Metadata columns: loaders (npy, csv/tsv, HDF5/CXI, IDX labels), errors,
// discovery beside a dataset, and the correlations with known answers and on
// a simulated one-axis rotation.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "manifold/dataset.h"
#include "manifold/diffusion_map.h"
#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/knn.h"
#include "manifold/metadata.h"
#include "manifold/npy.h"
#include "manifold/pdb.h"
#include "manifold/simulate.h"
#include "test_support.h"

using namespace manifold;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<MetadataColumn> load(const std::string& spec) { return load_metadata_file(parse_metadata_spec(spec)); }

TEST(Metadata, NpyOneColumnRoundTrip) {
  TempDir t;
  const std::vector<double> v = {0.5, -1.25, 3e10, 7};
  npy::write(t / "run.npy", v.data(), {4});
  auto cols = load(t / "run.npy");
  ASSERT_EQ(cols.size(), 1u);
  EXPECT_EQ(cols[0].name, "run");
  EXPECT_EQ(cols[0].kind, MetadataKind::Numeric);
  EXPECT_EQ(cols[0].values, v);
  EXPECT_EQ(cols[0].text(1), "-1.25");
  // :COLUMN names it.
  cols = load(t / "run.npy:energy");
  EXPECT_EQ(cols[0].name, "energy");
  EXPECT_EQ(cols[0].source, t / "run.npy");
}

TEST(Metadata, NpyMatrixColumnsNamedByIndex) {
  TempDir t;
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};  // 3 x 2, float32 on disk
  npy::write(t / "pos.npy", v.data(), {3, 2});
  auto cols = load(t / "pos.npy");
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].name, "pos_0");
  EXPECT_EQ(cols[1].name, "pos_1");
  EXPECT_EQ(cols[0].values, (std::vector<double>{1, 3, 5}));
  EXPECT_EQ(cols[1].values, (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(load(t / "pos.npy:xy")[1].name, "xy_1");
}

TEST(Metadata, AnglesAndLabelsFiles) {
  TempDir t;
  const std::vector<double> rad = {0.1, 3.0, 6.2};
  npy::write(t / "set.angles.npy", rad.data(), {3});
  auto a = load(t / "set.angles.npy");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].name, "angle");
  EXPECT_EQ(a[0].kind, MetadataKind::Angle);
  EXPECT_EQ(a[0].unit, AngleUnit::Radians);
  EXPECT_DOUBLE_EQ(a[0].radians(1), 3.0);
  // Beyond one turn in radians: degrees.
  const std::vector<double> deg = {10, 180, 350};
  npy::write(t / "tilt.angles.npy", deg.data(), {3});
  a = load(t / "tilt.angles.npy");
  EXPECT_EQ(a[0].unit, AngleUnit::Degrees);
  EXPECT_NEAR(a[0].radians(1), M_PI, 1e-15);

  // The simulator's ground truth for random orientations.
  const std::vector<double> q(12, 0.5);
  npy::write(t / "set.quaternions.npy", q.data(), {3, 4});
  auto qc = load(t / "set.quaternions.npy");
  ASSERT_EQ(qc.size(), 4u);
  EXPECT_EQ(qc[3].name, "quaternion_3");
  EXPECT_EQ(discover_metadata(t / "set.npy").size(), 2u);  // angles and quaternions beside set.npy

  const std::vector<int64_t> labels = {2, 0, 2, 1};
  npy::write(t / "set.labels.npy", labels.data(), {4});
  auto l = load(t / "set.labels.npy");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].name, "label");
  EXPECT_EQ(l[0].kind, MetadataKind::Categorical);
  EXPECT_EQ(l[0].codes, (std::vector<int32_t>{2, 0, 2, 1}));
  EXPECT_EQ(l[0].categories, (std::vector<std::string>{"0", "1", "2"}));
  // A class-name list beside it names the codes.
  write_text(t / "set.labels.classes.txt", "cat\ndog\nbird\n");
  l = load(t / "set.labels.npy");
  EXPECT_EQ(l[0].categories, (std::vector<std::string>{"cat", "dog", "bird"}));
  EXPECT_EQ(l[0].text(0), "bird");
  // Without a list, the "classes" of NAME.json beside it (simulate diffraction --mix).
  fs::remove(t / "set.labels.classes.txt");
  write_text(t / "set.json", R"({"count": 4, "classes": ["blank", "single", "double"]})");
  l = load(t / "set.labels.npy");
  EXPECT_EQ(l[0].categories, (std::vector<std::string>{"blank", "single", "double"}));
  write_text(t / "set.json", "not json");
  EXPECT_EQ(load(t / "set.labels.npy")[0].categories, (std::vector<std::string>{"0", "1", "2"}));
  // Labels that are not small non-negative integers keep their order.
  const std::vector<int64_t> runs = {-5, 100000, -5};
  npy::write(t / "r.labels.npy", runs.data(), {3});
  fs::remove(t / "classes.txt");
  l = load(t / "r.labels.npy");
  EXPECT_EQ(l[0].categories, (std::vector<std::string>{"-5", "100000"}));
  EXPECT_EQ(l[0].codes, (std::vector<int32_t>{0, 1, 0}));
}

TEST(Metadata, CsvNumericCategoricalQuotedAndMissing) {
  TempDir t;
  write_text(t / "m.csv",
             "\xEF\xBB\xBF"
             "energy, class ,note,rotation_deg\r\n"
             "1, hit ,\"a, b\",10\r\n"
             "2,miss,\"say \"\"x\"\"\",\r\n"
             "3,hit,\"two\nlines\",NaN\r\n");
  auto cols = load(t / "m.csv");
  ASSERT_EQ(cols.size(), 4u);
  EXPECT_EQ(cols[0].name, "energy");
  EXPECT_EQ(cols[0].kind, MetadataKind::Numeric);
  EXPECT_EQ(cols[0].values, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(cols[0].source, t / "m.csv" + ":energy");
  EXPECT_EQ(cols[1].name, "class");
  EXPECT_EQ(cols[1].kind, MetadataKind::Categorical);
  EXPECT_EQ(cols[1].categories, (std::vector<std::string>{"hit", "miss"}));
  EXPECT_EQ(cols[1].codes, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(cols[2].kind, MetadataKind::Categorical);
  EXPECT_EQ(cols[2].text(0), "a, b");
  EXPECT_EQ(cols[2].text(1), "say \"x\"");
  EXPECT_EQ(cols[2].text(2), "two\nlines");
  EXPECT_EQ(cols[3].kind, MetadataKind::Angle);
  EXPECT_EQ(cols[3].unit, AngleUnit::Degrees);
  EXPECT_DOUBLE_EQ(cols[3].values[0], 10);
  EXPECT_TRUE(std::isnan(cols[3].values[1]));
  EXPECT_TRUE(std::isnan(cols[3].values[2]));
  EXPECT_EQ(cols[3].text(1), "");
  // One column by name.
  cols = load(t / "m.csv:class");
  ASSERT_EQ(cols.size(), 1u);
  EXPECT_EQ(cols[0].name, "class");
}

TEST(Metadata, IntegerColumnsNamedAsClassesAreCategorical) {
  TempDir t;
  write_text(t / "m.csv", "run,hit_class,width,runtime,cluster id\n7,1,3,1.5,\n7,0,4,2,2\n9,1,5,3,0\n");
  auto cols = load(t / "m.csv");
  ASSERT_EQ(cols.size(), 5u);
  EXPECT_EQ(cols[0].kind, MetadataKind::Categorical);  // run
  EXPECT_EQ(cols[0].categories.size(), 10u);           // codes are the run numbers 0..9
  EXPECT_EQ(cols[0].codes, (std::vector<int32_t>{7, 7, 9}));
  EXPECT_EQ(cols[1].kind, MetadataKind::Categorical);  // hit_class
  EXPECT_EQ(cols[2].kind, MetadataKind::Numeric);      // width: "id" is not a word of it
  EXPECT_EQ(cols[3].kind, MetadataKind::Numeric);      // runtime: not integers, nor the word run
  EXPECT_EQ(cols[4].kind, MetadataKind::Categorical);  // cluster id, one missing
  EXPECT_EQ(cols[4].codes, (std::vector<int32_t>{-1, 2, 0}));
  EXPECT_EQ(cols[4].text(0), "");
}

TEST(Metadata, TsvByExtension) {
  TempDir t;
  write_text(t / "m.tsv", "a\tb\n1.5\tx y\n-2\tz\n");
  auto cols = load(t / "m.tsv");
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].values, (std::vector<double>{1.5, -2}));
  EXPECT_EQ(cols[1].categories, (std::vector<std::string>{"x y", "z"}));
}

TEST(Metadata, CsvErrorsNameFileLineAndColumn) {
  TempDir t;
  write_text(t / "bad.csv", "a,b,c\n1,2,3\n4,5\n");
  EXPECT_EQ(message_of([&] { load(t / "bad.csv"); }),
            t / "bad.csv" + ":3: 2 fields but the header has 3 (column 'c' missing)");
  write_text(t / "extra.csv", "a,b\n1,2,3\n");
  EXPECT_EQ(message_of([&] { load(t / "extra.csv"); }),
            t / "extra.csv" + ":2: 3 fields but the header has 2 (extra field after 'b')");
  write_text(t / "quote.csv", "a,b\n1,\"open\n2,3\n");
  EXPECT_EQ(message_of([&] { load(t / "quote.csv"); }), t / "quote.csv" + ":2: field 2: unterminated quote");
  write_text(t / "ok.csv", "a,b\n1,2\n");
  EXPECT_EQ(message_of([&] { load(t / "ok.csv:c"); }), t / "ok.csv" + ": no column 'c' (columns: a, b)");
  write_text(t / "empty.csv", "");
  EXPECT_NE(message_of([&] { load(t / "empty.csv"); }).find("empty"), std::string::npos);
  EXPECT_EQ(message_of([&] { parse_metadata_spec(t / "none.csv:x"); }),
            t / "none.csv" + ": cannot open metadata file (no such file)");
  write_text(t / "m.xyz", "1\n");
  EXPECT_NE(message_of([&] { load(t / "m.xyz"); }).find("unrecognised metadata format"), std::string::npos);
}

TEST(Metadata, LengthMismatchIsOneLine) {
  TempDir t;
  const std::vector<double> v(999, 1.0);
  npy::write(t / "w.npy", v.data(), {999});
  const std::string msg = message_of([&] { load_metadata({t / "w.npy"}, 1000, ""); });
  EXPECT_EQ(msg, t / "w.npy" + ": 999 values but the dataset has 1000 rows");
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(Metadata, SpecSplitsAtTheLongestExistingFile) {
  TempDir t;
  write_text(t / "a:b.csv", "x\n1\n");
  EXPECT_EQ(parse_metadata_spec(t / "a:b.csv").file, t / "a:b.csv");
  auto s = parse_metadata_spec(t / "a:b.csv:x");
  EXPECT_EQ(s.file, t / "a:b.csv");
  EXPECT_EQ(s.column, "x");
  write_text(t / "f.cxi", "");
  s = parse_metadata_spec(t / "f.cxi:/entry_1/sample_1/rotation_angle");
  EXPECT_EQ(s.file, t / "f.cxi");
  EXPECT_EQ(s.column, "/entry_1/sample_1/rotation_angle");
}

TEST(Metadata, CxiDatasetsByPath) {
  TempDir t;
  DiffractionImages d;
  d.count = 5;
  d.size = 2;
  d.images.assign(20, 1.0f);
  d.axis = "x";
  d.angles = {0.0, 1.0, 2.0, 3.0, 4.0};
  d.quaternions.assign(20, 0.5);
  d.metadata = {{"pdb_id", "test"}};
  write_diffraction(t / "s.cxi", d);
  auto cols = load(t / "s.cxi:/entry_1/sample_1/rotation_angle");
  ASSERT_EQ(cols.size(), 1u);
  EXPECT_EQ(cols[0].name, "rotation_angle");
  EXPECT_EQ(cols[0].kind, MetadataKind::Angle);
  EXPECT_EQ(cols[0].values, d.angles);
  EXPECT_EQ(cols[0].source, t / "s.cxi:/entry_1/sample_1/rotation_angle");
  cols = load(t / "s.cxi:/entry_1/sample_1/orientation_quaternion");
  ASSERT_EQ(cols.size(), 4u);
  EXPECT_EQ(cols[3].name, "orientation_quaternion_3");
  EXPECT_EQ(cols[3].values, std::vector<double>(5, 0.5));
  // Inside a CXI file given as the data, /entry_1/sample_1's datasets are found.
  const auto found = discover_metadata(t / "s.cxi");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].column, "/entry_1/sample_1/orientation_quaternion");
  EXPECT_EQ(found[1].column, "/entry_1/sample_1/rotation_angle");
  MetadataTable table = load_metadata({t / "s.cxi:/entry_1/sample_1/rotation_angle"}, 5, t / "s.cxi");
  ASSERT_EQ(table.columns().size(), 5u);  // the named angle once, then the 4 quaternion columns
  EXPECT_EQ(table.columns()[0].name, "rotation_angle");
  EXPECT_EQ(table.columns()[1].name, "orientation_quaternion_0");
  EXPECT_EQ(message_of([&] { load(t / "s.cxi:/entry_1/nothing"); }), t / "s.cxi" + ": no dataset '/entry_1/nothing'");
  EXPECT_NE(message_of([&] { load(t / "s.cxi"); }).find("name the dataset"), std::string::npos);
  EXPECT_NE(message_of([&] { load(t / "s.cxi:/entry_1/data_1/data"); }).find("3 dimensions"), std::string::npos);

  // Fixed-length strings: a categorical column.
  hid_t f = H5Fopen((t / "s.cxi").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, 4);
  const hsize_t n = 5;
  hid_t space = H5Screate_simple(1, &n, nullptr);
  hid_t ds = H5Dcreate2(f, "/entry_1/sample_1/hit", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char text[] =
      "hit\0miss"
      "no\0\0hit\0hit\0";
  H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text);
  H5Dclose(ds), H5Sclose(space), H5Tclose(type), H5Fclose(f);
  cols = load(t / "s.cxi:/entry_1/sample_1/hit");
  ASSERT_EQ(cols.size(), 1u);
  EXPECT_EQ(cols[0].kind, MetadataKind::Categorical);
  EXPECT_EQ(cols[0].categories, (std::vector<std::string>{"hit", "miss", "no"}));
  EXPECT_EQ(cols[0].codes, (std::vector<int32_t>{0, 1, 2, 0, 0}));

  // The GUI offers every dataset of N rows, wherever it is; the 3-D images are not one.
  const auto of_five = hdf5_datasets_of_length(t / "s.cxi", 5);
  for (const char* p :
       {"/entry_1/sample_1/hit", "/entry_1/sample_1/orientation_quaternion", "/entry_1/sample_1/rotation_angle"})
    EXPECT_NE(std::find(of_five.begin(), of_five.end(), p), of_five.end()) << p;
  EXPECT_EQ(std::find(of_five.begin(), of_five.end(), "/entry_1/data_1/data"), of_five.end());
  EXPECT_TRUE(std::is_sorted(of_five.begin(), of_five.end()));
  EXPECT_TRUE(hdf5_datasets_of_length(t / "s.cxi", 4).empty());
  EXPECT_NE(message_of([&] { hdf5_datasets_of_length(t / "none.h5", 5); }).find("none.h5: cannot open"),
            std::string::npos);
}

// A 1-D float64 dataset of `n` values at `path`, with its parent groups.
void add_column(hid_t file, const std::string& path, hsize_t n) {
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t space = H5Screate_simple(1, &n, nullptr);
  hid_t d = H5Dcreate2(file, path.c_str(), H5T_IEEE_F64LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(d, 0) << path;
  const std::vector<double> v(n, 0.5);
  EXPECT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0) << path;
  H5Dclose(d), H5Sclose(space), H5Pclose(lcpl);
}

// The search for columns of N rows goes down nested groups, lists a group
// that hard links make its own descendant once, and follows no soft or
// external link (a dangling one is no error).
TEST(Metadata, Hdf5DatasetsOfLengthInNestedGroups) {
  TempDir t;
  const std::string path = t / "nested.h5";
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  add_column(f, "/top", 5);
  add_column(f, "/x/y/z/angle", 5);
  add_column(f, "/x/y/z/other", 4);
  EXPECT_GE(H5Lcreate_hard(f, "/x", f, "/x/y/back", H5P_DEFAULT, H5P_DEFAULT), 0);
  EXPECT_GE(H5Lcreate_soft("/x/y/z/angle", f, "/x/alias", H5P_DEFAULT, H5P_DEFAULT), 0);
  EXPECT_GE(H5Lcreate_soft("/nowhere", f, "/x/dangling", H5P_DEFAULT, H5P_DEFAULT), 0);
  EXPECT_GE(H5Lcreate_external("missing.h5", "/angle", f, "/x/missing", H5P_DEFAULT, H5P_DEFAULT), 0);
  H5Fclose(f);
  EXPECT_EQ(hdf5_datasets_of_length(path, 5), (std::vector<std::string>{"/top", "/x/y/z/angle"}));
  EXPECT_EQ(hdf5_datasets_of_length(path, 4), (std::vector<std::string>{"/x/y/z/other"}));
  EXPECT_TRUE(hdf5_datasets_of_length(path, 3).empty());
}

// A metadata file cannot make us open another file: a dataset named through
// an external link is refused in one line (whether or not its target
// exists), a soft link inside the file is followed, and a CXI file's
// /entry_1/sample_1 offers only its datasets by hard link.
TEST(Metadata, Hdf5ExternalLinksAreRefused) {
  TempDir t;
  const std::string other = t / "other.h5", path = t / "s.cxi";
  hid_t f = H5Fcreate(other.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  add_column(f, "/angle", 5);
  H5Fclose(f);
  f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  add_column(f, "/entry_1/sample_1/own", 5);
  EXPECT_GE(H5Lcreate_external(other.c_str(), "/angle", f, "/entry_1/sample_1/theirs", H5P_DEFAULT, H5P_DEFAULT), 0);
  EXPECT_GE(H5Lcreate_external("missing.h5", "/angle", f, "/entry_1/sample_1/missing", H5P_DEFAULT, H5P_DEFAULT), 0);
  EXPECT_GE(H5Lcreate_soft("/entry_1/sample_1/own", f, "/entry_1/sample_1/alias", H5P_DEFAULT, H5P_DEFAULT), 0);
  EXPECT_GE(H5Lcreate_external(other.c_str(), "/", f, "/far", H5P_DEFAULT, H5P_DEFAULT), 0);
  H5Fclose(f);
  for (const char* name : {"/entry_1/sample_1/theirs", "/entry_1/sample_1/missing", "/far/angle"}) {
    const std::string msg = message_of([&] { load(path + ":" + name); });
    EXPECT_EQ(msg, path + ": '" + name +
                       "' leads through an external link to another file; refused (copy the data into this file)")
        << name;
  }
  const auto alias = load(path + ":/entry_1/sample_1/alias");
  ASSERT_EQ(alias.size(), 1u);
  EXPECT_EQ(alias[0].values, std::vector<double>(5, 0.5));
  const auto found = discover_metadata(path);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].column, "/entry_1/sample_1/own");
}

TEST(Metadata, IdxLabelsSynthetic) {
  TempDir t;
  const std::string path = t / "x-labels-idx1-ubyte.gz";
  gzFile f = gzopen(path.c_str(), "wb");
  const unsigned char data[] = {0, 0, 8, 1, 0, 0, 0, 4, 3, 1, 3, 0};
  gzwrite(f, data, sizeof data);
  gzclose(f);
  auto cols = load(path);
  ASSERT_EQ(cols.size(), 1u);
  EXPECT_EQ(cols[0].name, "label");
  EXPECT_EQ(cols[0].codes, (std::vector<int32_t>{3, 1, 3, 0}));
  EXPECT_EQ(cols[0].categories.size(), 4u);
  write_text(t / "classes.txt", "zero\none\ntwo\nthree\n");
  cols = load(path + ":class");
  EXPECT_EQ(cols[0].name, "class");
  EXPECT_EQ(cols[0].text(0), "three");
  write_text(t / "y-labels-idx1-ubyte", std::string("\0\0\x08\x01\0\0\0\x09\x01", 9));
  EXPECT_NE(message_of([&] { load(t / "y-labels-idx1-ubyte"); }).find("truncated: header announces 9 labels"),
            std::string::npos);
}

// IDX labels in a folder that says "fashion" are named as Fashion-MNIST's
// classes, unless a class list is beside them or a code is not one of its ten.
TEST(Metadata, IdxLabelsInAFashionFolderAreNamed) {
  TempDir t;
  fs::create_directories(t / "Fashion-MNIST/raw");
  const std::string path = t / "Fashion-MNIST/raw/t10k-labels-idx1-ubyte";
  auto write_labels = [&](std::vector<unsigned char> codes) {
    std::string bytes("\0\0\x08\x01", 4);
    for (int shift : {24, 16, 8, 0}) bytes += static_cast<char>(codes.size() >> shift & 0xff);
    bytes.append(codes.begin(), codes.end());
    write_text(path, bytes);
  };
  write_labels({9, 0, 8, 1});
  auto cols = load(path);
  ASSERT_EQ(cols.size(), 1u);
  EXPECT_EQ(cols[0].text(0), "Ankle boot");
  EXPECT_EQ(cols[0].text(1), "T-shirt/top");
  EXPECT_EQ(cols[0].text(2), "Bag");
  write_labels({9, 0, 10, 1});  // not Fashion-MNIST's codes: the numbers
  EXPECT_EQ(load(path)[0].text(2), "10");
  write_labels({9, 0, 8, 1});
  write_text(t / "Fashion-MNIST/raw/classes.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");  // the user's list wins
  EXPECT_EQ(load(path)[0].text(0), "j");
}

TEST(Metadata, FashionMnistLabels) {
  const std::string path = testing_support::fashion_mnist_dir() + "/t10k-labels-idx1-ubyte.gz";
  if (!fs::exists(path)) GTEST_SKIP() << "no Fashion-MNIST labels";
  MetadataColumn c = read_idx_labels(path);
  ASSERT_EQ(c.rows(), 10000);
  ASSERT_EQ(c.categories.size(), 10u);
  std::vector<int> count(10, 0);
  for (int32_t code : c.codes) ++count[static_cast<size_t>(code)];
  for (int k = 0; k < 10; ++k) EXPECT_EQ(count[static_cast<size_t>(k)], 1000) << k;  // the test set is balanced
  EXPECT_EQ(c.codes[0], 9);            // the first test image is an ankle boot
  EXPECT_EQ(c.text(0), "Ankle boot");  // named: no class list beside, and the folder says fashion
  // Discovered beside the images.
  auto found = discover_metadata(testing_support::fashion_mnist_dir() + "/t10k-images-idx3-ubyte.gz");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].file, path);
}

TEST(Metadata, DiscoveryBesideNpy) {
  TempDir t;
  const std::vector<float> images(4 * 3, 1.0f);
  npy::write(t / "set.npy", images.data(), {4, 3});
  const std::vector<int64_t> labels = {0, 1, 1, 0};
  const std::vector<double> angles = {0, 1, 2, 3};
  npy::write(t / "set.labels.npy", labels.data(), {4});
  npy::write(t / "set.angles.npy", angles.data(), {4});
  write_text(t / "set.csv", "run,class\n1,a\n1,b\n2,a\n2,b\n");
  write_text(t / "other.csv", "x\n1\n2\n3\n4\n");  // not beside set.npy by name
  auto found = discover_metadata(t / "set.npy");
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].file, t / "set.labels.npy");
  EXPECT_EQ(found[1].file, t / "set.angles.npy");
  EXPECT_EQ(found[2].file, t / "set.csv");

  std::vector<std::string> warnings;
  MetadataTable table = load_metadata({t / "other.csv"}, 4, t / "set.npy", &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(table.columns().size(), 5u);
  EXPECT_EQ(table.columns()[0].name, "x");
  EXPECT_EQ(table.columns()[1].name, "label");
  EXPECT_EQ(table.columns()[2].name, "angle");
  EXPECT_EQ(table.columns()[3].name, "run");
  EXPECT_EQ(table.columns()[4].name, "class");
  // An explicit file also found beside the data is loaded once.
  table = load_metadata({t / "set.csv:run"}, 4, t / "set.npy", &warnings);
  EXPECT_EQ(table.columns().size(), 3u);
  // A discovered file of another length is left out with a warning, not an error.
  write_text(t / "set.csv", "run\n1\n");
  table = load_metadata({}, 4, t / "set.npy", &warnings);
  EXPECT_EQ(table.columns().size(), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], t / "set.csv" + ":run: 1 values but the dataset has 4 rows (found beside the data; left out)");
  // Same names get a suffix.
  MetadataTable twice = load_metadata({t / "set.angles.npy", t / "set.angles.npy:angle"}, 4, "");
  EXPECT_EQ(twice.columns()[1].name, "angle_2");
}

// ---- correlation ---------------------------------------------------------------

TEST(MetadataCorrelation, KnownAnswers) {
  // 200 points: psi1 = cos(theta), psi2 = sin(theta) (scaled unequally, as
  // lambda^t would), psi3 = noise; a numeric column linear in psi3, a
  // category that fixes psi1 exactly (two values), the angle.
  const int64_t n = 200;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0, 1);
  MetadataTable table(n);
  MetadataColumn angle, lin, cat;
  angle.name = "angle", angle.kind = MetadataKind::Angle;
  lin.name = "lin";
  cat.name = "cat", cat.kind = MetadataKind::Categorical, cat.categories = {"a", "b"};
  std::vector<double> x(static_cast<size_t>(n * 3));
  for (int64_t i = 0; i < n; ++i) {
    const double th = 2 * M_PI * static_cast<double>(i) / static_cast<double>(n);
    const bool b = i % 2;
    x[i * 3] = b ? 1.0 : -1.0;
    x[i * 3 + 1] = 0.3 * std::sin(th);
    x[i * 3 + 2] = g(rng);
    angle.values.push_back(th);
    lin.values.push_back(-4 * x[i * 3 + 2] + 1);
    cat.codes.push_back(b ? 1 : 0);
  }
  // psi1 as cos(theta) for the angle instead: a second table over other coordinates.
  table.add(lin);
  table.add(cat);
  auto r = correlate_metadata(table, x.data(), n, 3, nullptr);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].statistic, "pearson");
  EXPECT_NEAR(r[0].per_coordinate[2], -1.0, 1e-12);
  EXPECT_EQ(r[0].best, 2);
  EXPECT_EQ(r[1].statistic, "correlation_ratio");
  EXPECT_NEAR(r[1].per_coordinate[0], 1.0, 1e-12);
  EXPECT_LT(r[1].per_coordinate[2], 0.3);
  EXPECT_EQ(r[1].best, 0);

  MetadataTable ring(n);
  ring.add(angle);
  std::vector<double> y(static_cast<size_t>(n * 3));
  for (int64_t i = 0; i < n; ++i) {
    y[i * 3] = x[i * 3 + 2];                       // noise first
    y[i * 3 + 1] = 5 * std::cos(angle.values[i]);  // then the ring, unequal scales
    y[i * 3 + 2] = 0.01 * std::sin(angle.values[i]);
  }
  r = correlate_metadata(ring, y.data(), n, 3, nullptr);
  EXPECT_EQ(r[0].statistic, "circular_linear");
  EXPECT_NEAR(r[0].per_coordinate[1], 1.0, 1e-9);
  EXPECT_NEAR(r[0].per_coordinate[2], 1.0, 1e-9);
  EXPECT_EQ(r[0].pair_i, 1);
  EXPECT_EQ(r[0].pair_j, 2);
  EXPECT_EQ(r[0].pair_harmonic, 1);
  EXPECT_NEAR(r[0].pair_fisher_lee, 1.0, 1e-9);
  // Twice the angle (a two-fold symmetry) is found as harmonic 2.
  for (int64_t i = 0; i < n; ++i) {
    y[i * 3 + 1] = std::cos(2 * angle.values[i]);
    y[i * 3 + 2] = -std::sin(2 * angle.values[i]);
  }
  r = correlate_metadata(ring, y.data(), n, 3, nullptr);
  EXPECT_EQ(r[0].pair_harmonic, 2);
  EXPECT_NEAR(r[0].pair_fisher_lee, -1.0, 1e-9);
  EXPECT_NE(correlation_summary(r).find("angle ~ atan2(psi3, psi2) (twice the angle) circular -1.000"),
            std::string::npos)
      << correlation_summary(r);
}

TEST(MetadataCorrelation, RowsFollowPointIndex) {
  // 6 table rows, 4 embedded points (rows 5, 0, 3, 1): the coordinate equals
  // the value of the row each point stands for.
  MetadataTable table(6);
  MetadataColumn c;
  c.name = "v";
  c.values = {10, 11, 12, 13, 14, 15};
  table.add(c);
  const std::vector<int64_t> index = {5, 0, 3, 1};
  const std::vector<double> psi = {15, 10, 13, 11};
  auto r = correlate_metadata(table, psi.data(), 4, 1, index.data());
  EXPECT_EQ(r[0].rows_used, 4);
  EXPECT_NEAR(r[0].per_coordinate[0], 1.0, 1e-12);
  auto unmapped = correlate_metadata(table, psi.data(), 4, 1, nullptr);
  EXPECT_LT(unmapped[0].per_coordinate[0], 0.9);
}

TEST(MetadataCorrelation, TooManyCategoriesIsUndefined) {
  // One category per point makes eta 1 whatever psi is: reported as undefined.
  const int64_t n = 50;
  MetadataTable table(n);
  MetadataColumn id;
  id.name = "id";
  id.kind = MetadataKind::Categorical;
  std::vector<double> psi;
  for (int64_t i = 0; i < n; ++i) {
    id.codes.push_back(static_cast<int32_t>(i));
    id.categories.push_back("image" + std::to_string(i));
    psi.push_back(std::sin(0.37 * static_cast<double>(i)));
  }
  table.add(id);
  auto r = correlate_metadata(table, psi.data(), n, 1, nullptr);
  EXPECT_TRUE(std::isnan(r[0].per_coordinate[0]));
  EXPECT_EQ(r[0].best, -1);
  EXPECT_EQ(correlation_summary(r),
            "metadata: 1 column without a defined correlation (constant, or too many categories)");
  EXPECT_TRUE(correlation_json(table, r)["columns"][0]["per_coordinate"][0].is_null());
}

std::string ubiquitin_path() {
  try {
    return find_packaged_pdb("1ubq");
  } catch (const Error&) {
    return "";
  }
}

// The acceptance case: a one-axis rotation simulated, written as the CLI
// writes it (set.npy + set.angles.npy), the angle found beside the data, and
// atan2(psi2, psi1) follows it.
TEST(MetadataCorrelation, SimulatedRotationFollowsTheAngle) {
  const std::string pdb = ubiquitin_path();
  if (pdb.empty()) GTEST_SKIP() << "freesasa (1ubq.pdb) is not installed";
  DiffractionParams p;
  p.count = 800;
  p.size = 24;
  p.axis = "x";
  p.seed = 5;
  Progress progress;
  DiffractionImages d = simulate_diffraction(read_pdb(pdb), p, progress);
  TempDir t;
  write_diffraction(t / "set.npy", d);
  std::vector<float> v = d.images;
  anscombe_transform(v.data(), static_cast<int64_t>(v.size()));
  Dataset ds(p.count, p.size * p.size, std::move(v));
  register_cpu_backend();
  KnnParams kp;
  kp.k = 20;
  DiffusionParams dp;
  dp.components = 4;
  DiffusionResult r = diffusion_map(make_backend("cpu")->build(ds, kp, progress), dp, progress);

  MetadataTable table = load_metadata({}, p.count, t / "set.npy");
  ASSERT_EQ(table.columns().size(), 1u);
  ASSERT_EQ(table.columns()[0].kind, MetadataKind::Angle);
  auto c = metadata_correlations(r, table);
  ASSERT_EQ(c.size(), 1u);
  std::printf("simulated rotation about x: %s\n", correlation_summary(c).c_str());
  EXPECT_EQ(c[0].pair_i, 0);
  EXPECT_EQ(c[0].pair_j, 1);
  EXPECT_EQ(c[0].pair_harmonic, 1);
  EXPECT_GE(std::abs(c[0].pair_fisher_lee), 0.99);
  // The same on atan2(psi2, psi1) itself, unstandardised.
  std::vector<double> phi, truth;
  for (int64_t e = 0; e < r.n; ++e) {
    phi.push_back(std::atan2(r.psi[e * 5 + 2], r.psi[e * 5 + 1]));
    truth.push_back(d.angles[r.point_index[e]]);
  }
  EXPECT_GE(std::abs(fisher_lee(phi, truth)), 0.99);
  // The pair's rho is Fisher-Lee's of atan2 of the standardised psi2, psi1.
  auto standard = [&](int k) {
    std::vector<double> z;
    double mean = 0, var = 0;
    for (int64_t e = 0; e < r.n; ++e) z.push_back(r.psi[e * 5 + k]), mean += z.back();
    mean /= static_cast<double>(r.n);
    for (double& v : z) v -= mean, var += v * v;
    for (double& v : z) v /= std::sqrt(var / static_cast<double>(r.n));
    return z;
  };
  const std::vector<double> z1 = standard(1), z2 = standard(2);
  for (int64_t e = 0; e < r.n; ++e) phi[e] = std::atan2(z2[e], z1[e]);
  EXPECT_NEAR(c[0].pair_fisher_lee, fisher_lee(phi, truth), 1e-12);
}

}  // namespace
