// `manifold info DATA`: the facts it prints (N, d, type, value range) for files
// written here with known contents, and its exit status and single stderr
// line on bad files and bad options.
#include <gtest/gtest.h>
#include <zlib.h>

#if __has_include(<hdf5.h>)
#include <hdf5.h>
#else
// Debian keeps the serial HDF5 headers in a subfolder that only targets
// linking HDF5 through CMake get on their include path.
#include <hdf5/serial/hdf5.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <sstream>

#include "manifold/npy.h"
#include "test_support.h"

using testing_support::run_cli;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;
  std::string out, err;
};

Result info(const std::string& args) {
  Result r;
  r.status = run_cli("info " + args, &r.err, &r.out);
  return r;
}

// The value printed after "key:" on its own line of `text`, or "(missing)".
std::string field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      const auto b = line.find_first_not_of(' ', key.size() + 1);
      return b == std::string::npos ? "" : line.substr(b);
    }
  return "(missing)";
}

std::string range_text(double lo, double hi) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "[%g, %g]", lo, hi);
  return buf;
}

void expect_one_error_line(const Result& r, int status, const std::string& must_contain) {
  EXPECT_EQ(r.status, status) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
  EXPECT_EQ(r.err.rfind("manifold: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(must_contain), std::string::npos) << "stderr lacks '" << must_contain << "': " << r.err;
  EXPECT_EQ(r.out, "");
}

class CliInfo : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_CLI(); }
  TempDir dir;
};

TEST_F(CliInfo, Int16ImagesNpy) {
  std::vector<int16_t> v(4 * 2 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int16_t>(-1234 + 517 * static_cast<int>(i) % 9000);
  const std::string path = dir / "stack.npy";
  manifold::npy::write(path, v.data(), {4, 2, 3});
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  Result r = info(path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(field(r.out, "file"), path);
  EXPECT_EQ(field(r.out, "format"), "npy");
  EXPECT_EQ(field(r.out, "N"), "4");
  EXPECT_EQ(field(r.out, "d"), "6 (item shape 2x3)");
  EXPECT_EQ(field(r.out, "type"), "int16");
  EXPECT_EQ(field(r.out, "range"), range_text(*lo, *hi));
  EXPECT_EQ(field(r.out, "labels"), "(missing)");
}

TEST_F(CliInfo, Float32NpyIsMemoryMapped) {
  std::vector<float> v(5 * 7);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(static_cast<int>(i * 37 % 101) - 40);
  const std::string path = dir / "vectors.npy";
  manifold::npy::write(path, v.data(), {5, 7});
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  Result r = info(path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "N"), "5");
  EXPECT_EQ(field(r.out, "d"), "7 (item shape 7)");
  EXPECT_EQ(field(r.out, "type"), "float32 (memory-mapped)");
  EXPECT_EQ(field(r.out, "range"), range_text(*lo, *hi));
}

TEST_F(CliInfo, MrcStack) {
  const int nx = 4, ny = 3, nz = 5;
  std::vector<unsigned char> file(1024, 0);
  const int32_t head[4] = {nx, ny, nz, 6};  // mode 6: uint16
  std::memcpy(file.data(), head, sizeof head);
  std::memcpy(file.data() + 208, "MAP ", 4);
  file[212] = file[213] = 0x44;
  uint16_t lo = 65535, hi = 0;
  for (int i = 0; i < nx * ny * nz; ++i) {
    const uint16_t x = static_cast<uint16_t>(300 + (i * 2731) % 60000);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    file.push_back(static_cast<unsigned char>(x & 0xff));
    file.push_back(static_cast<unsigned char>(x >> 8));
  }
  const std::string path = dir / "particles.mrcs";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  Result r = info(path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "format"), "mrc");
  EXPECT_EQ(field(r.out, "N"), "5");
  EXPECT_EQ(field(r.out, "d"), "12 (item shape 3x4)");
  EXPECT_EQ(field(r.out, "type"), "uint16");
  EXPECT_EQ(field(r.out, "range"), range_text(lo, hi));
}

TEST_F(CliInfo, Hdf5DatasetOption) {
  const std::string path = dir / "shots.h5";
  std::vector<uint8_t> v(6 * 5 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(3 + (i * 89) % 240);
  {
    hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    const hsize_t dims[3] = {6, 5, 4};
    hid_t space = H5Screate_simple(3, dims, nullptr);
    hid_t d = H5Dcreate2(file, "/run/images", H5T_STD_U8LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
    H5Dclose(d);
    H5Sclose(space);
    H5Pclose(lcpl);
    H5Fclose(file);
  }
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  Result r = info(path + " --dataset /run/images");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "format"), "hdf5");
  EXPECT_EQ(field(r.out, "N"), "6");
  EXPECT_EQ(field(r.out, "d"), "20 (item shape 5x4)");
  EXPECT_EQ(field(r.out, "type"), "uint8");
  EXPECT_EQ(field(r.out, "range"), range_text(*lo, *hi));
  // Without --dataset the CXI default is looked up, and the message points at the real one.
  expect_one_error_line(info(path), 1,
                        path +
                            ": no dataset '/entry_1/data_1/data'; 2-D/3-D datasets in the file: /run/images (6x5x4)");
}

TEST_F(CliInfo, GzipIdxWithLabels) {
  std::vector<unsigned char> img = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
  for (int i = 0; i < 12; ++i) img.push_back(static_cast<unsigned char>(10 + 20 * i));
  const std::vector<unsigned char> lab = {0, 0, 8, 1, 0, 0, 0, 3, 4, 1, 7};
  auto gz = [](const std::string& p, const std::vector<unsigned char>& b) {
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
    gzclose(f);
  };
  gz(dir / "tiny-images-idx3-ubyte.gz", img);
  gz(dir / "tiny-labels-idx1-ubyte.gz", lab);
  Result r = info(dir / "tiny-images-idx3-ubyte.gz");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "format"), "idx");
  EXPECT_EQ(field(r.out, "N"), "3");
  EXPECT_EQ(field(r.out, "d"), "4 (item shape 2x2)");
  EXPECT_EQ(field(r.out, "type"), "uint8");
  EXPECT_EQ(field(r.out, "range"), "[10, 230]");
  EXPECT_EQ(field(r.out, "labels"), "3");
}

TEST_F(CliInfo, FashionMnistTestImages) {
  const std::string path = testing_support::fashion_mnist_dir() + "/t10k-images-idx3-ubyte.gz";
  if (!fs::exists(path)) GTEST_SKIP() << "dataset-fashion-mnist is not installed (" << path << ")";
  Result r = info(path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "N"), "10000");
  EXPECT_EQ(field(r.out, "d"), "784 (item shape 28x28)");
  EXPECT_EQ(field(r.out, "type"), "uint8");
  EXPECT_EQ(field(r.out, "range"), "[0, 255]");
  EXPECT_EQ(field(r.out, "labels"), "10000");
}

TEST_F(CliInfo, MissingAndCorruptFilesExitOne) {
  const std::string missing = dir / "absent.npy";
  expect_one_error_line(info(missing), 1, missing + ": no such file or directory");

  const std::string garbage = dir / "garbage.npy";
  std::ofstream(garbage) << "this is not an array at all, just some text";
  expect_one_error_line(info(garbage), 1, garbage + ": not a .npy file (bad magic)");

  std::vector<float> v(10 * 4, 1.5f);
  for (size_t i = 0; i < v.size(); ++i) v[i] += static_cast<float>(i);
  const std::string cut = dir / "cut.npy";
  manifold::npy::write(cut, v.data(), {10, 4});
  fs::resize_file(cut, fs::file_size(cut) - 9);
  expect_one_error_line(info(cut), 1, cut + ": truncated");

  v[22] = std::nanf("");
  const std::string nan = dir / "nan.npy";
  manifold::npy::write(nan, v.data(), {10, 4});
  expect_one_error_line(info(nan), 1, nan + ": row 5 holds a non-finite value (NaN at column 2)");

  expect_one_error_line(info(dir.path), 1, dir.path + ": folder holds no PNG or TIFF images");
}

// A file on which libhdf5 itself crashes (Debian's 1.10.8 copies through a
// null pointer reading its corrupt local heap; found by fuzz_hdf5): one line
// naming the file and exit status 1, not a death by SIGSEGV. A libhdf5 that
// checks such files gives its own one-line error, which passes too.
TEST_F(CliInfo, FileThatCrashesLibhdf5IsOneLine) {
  const char* data = std::getenv("MANIFOLD_TEST_DATA");
  if (!data) GTEST_SKIP() << "MANIFOLD_TEST_DATA is not set (ctest sets it: tests/cli/data)";
  const std::string path = std::string(data) + "/libhdf5-null-copy.h5";
  ASSERT_TRUE(fs::exists(path)) << path;
  expect_one_error_line(info(path), 1, "manifold: " + path + ": ");
}

TEST_F(CliInfo, BadArgumentsExitTwo) {
  std::vector<float> v = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  const std::string path = dir / "ok.npy";
  manifold::npy::write(path, v.data(), {2, 3});
  ASSERT_EQ(info(path).status, 0);
  expect_one_error_line(info(path + " --bogus"), 2, "--bogus");
  expect_one_error_line(info(""), 2, "info");
  expect_one_error_line(info(path + " " + path), 2, "info");
  expect_one_error_line(info(path + " --dataset"), 2, "--dataset");
}

}  // namespace
