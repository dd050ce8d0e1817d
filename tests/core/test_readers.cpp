// Dataset readers: every format is written here with known, non-zero contents
// (through libpng, libtiff, libhdf5, zlib, or by hand where the format is
// simple), read back through load_dataset and compared value by value; then
// every kind of bad input must fail with one line that names the file.
#include <gtest/gtest.h>
#include <png.h>
#include <tiffio.h>
#include <zip.h>
#include <zlib.h>

#if __has_include(<hdf5.h>)
#include <hdf5.h>
#else
// Debian keeps the serial HDF5 headers in a subfolder that only targets
// linking HDF5 through CMake get on their include path.
#include <hdf5/serial/hdf5.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "manifold/dataset.h"
#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/simulate.h"
#include "test_support.h"

using namespace manifold;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

// ---- sample types and known contents ---------------------------------------

struct Type {
  const char* name;  // as Dataset::source_dtype says it
  size_t size;
  bool is_float, is_signed;
};

const Type kU8{"uint8", 1, false, false}, kI8{"int8", 1, false, true}, kU16{"uint16", 2, false, false},
    kI16{"int16", 2, false, true}, kU32{"uint32", 4, false, false}, kI32{"int32", 4, false, true},
    kI64{"int64", 8, false, true}, kF16{"float16", 2, true, true}, kF32{"float32", 4, true, true},
    kF64{"float64", 8, true, true};

void PrintTo(const Type& t, std::ostream* os) { *os << t.name; }

// Value number i of a test array: spread over the type's range, exactly
// representable in it, never all zero.
double pattern(const Type& t, int64_t i) {
  const uint64_t h = static_cast<uint64_t>(i) * 2654435761u + 12345u;
  if (t.is_float) {
    if (t.size == 2) return static_cast<double>(static_cast<int>(h % 61)) * 0.25 - 7.5;  // exact in float16
    if (t.size == 4) return static_cast<double>(static_cast<float>(static_cast<int>(h % 2001) - 1000) * 0.37f);
    return (static_cast<double>(h % 100003) - 50000.5) * 1.2345e-3;
  }
  const int bits = static_cast<int>(8 * std::min<size_t>(t.size, 4));
  const uint64_t span = uint64_t{1} << bits;
  const int64_t u = static_cast<int64_t>(h % span);
  if (t.size == 8) return static_cast<double>(u) * 1000.0 - 3.0e12;  // int64 beyond 32 bits
  return t.is_signed ? static_cast<double>(u - static_cast<int64_t>(span / 2)) : static_cast<double>(u);
}

uint16_t to_half(double v) {
  // Exact for the normal values pattern() makes.
  const float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7fffffffu) == 0) return static_cast<uint16_t>(b >> 16);
  const uint32_t sign = (b >> 16) & 0x8000u, exp = ((b >> 23) & 0xffu) - 127 + 15, mant = (b >> 13) & 0x3ffu;
  return static_cast<uint16_t>(sign | exp << 10 | mant);
}

// Writes value v as type t at out (little- or big-endian).
void encode(const Type& t, double v, bool big, unsigned char* out) {
  unsigned char b[8];
  if (t.is_float && t.size == 2) {
    const uint16_t h = to_half(v);
    std::memcpy(b, &h, 2);
  } else if (t.is_float && t.size == 4) {
    const float f = static_cast<float>(v);
    std::memcpy(b, &f, 4);
  } else if (t.is_float) {
    std::memcpy(b, &v, 8);
  } else {
    const int64_t x = static_cast<int64_t>(v);
    std::memcpy(b, &x, 8);  // little-endian host: the low bytes come first
  }
  for (size_t j = 0; j < t.size; ++j) out[j] = big ? b[t.size - 1 - j] : b[j];
}

std::vector<unsigned char> encode_all(const Type& t, const std::vector<double>& v, bool big = false) {
  std::vector<unsigned char> out(v.size() * t.size);
  for (size_t i = 0; i < v.size(); ++i) encode(t, v[i], big, out.data() + i * t.size);
  return out;
}

std::vector<double> values(const Type& t, int64_t count, int64_t seed = 0) {
  std::vector<double> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = pattern(t, i + seed * 1000);
  return v;
}

void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void truncate_file(const std::string& path, size_t keep) { fs::resize_file(path, keep); }

// Every element of ds equals the float conversion of expected[i].
void expect_values(const Dataset& ds, const std::vector<double>& expected, float tol = 0.f) {
  ASSERT_EQ(static_cast<size_t>(ds.rows() * ds.cols()), expected.size());
  size_t bad = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const float want = static_cast<float>(expected[i]);
    if (!(std::fabs(ds.data()[i] - want) <= tol * std::max(1.f, std::fabs(want)))) {
      if (++bad <= 3) ADD_FAILURE() << "value " << i << ": got " << ds.data()[i] << ", want " << want;
    }
  }
  EXPECT_EQ(bad, 0u);
}

// load_dataset must throw Error with one line that starts with `file` and
// contains `what`.
void expect_error(const std::string& path, const std::string& file, const std::string& what, ReadOptions opt = {}) {
  try {
    Dataset ds = load_dataset(path, opt);
    ADD_FAILURE() << path << ": loaded " << ds.rows() << " x " << ds.cols() << " instead of failing with '" << what
                  << "'";
  } catch (const UsageError& e) {
    ADD_FAILURE() << "UsageError instead of Error: " << e.what();
  } catch (const Error& e) {
    const std::string m = e.what();
    if (std::getenv("MANIFOLD_SHOW_ERRORS")) std::printf("    %s\n", m.c_str());  // to review the wording
    EXPECT_EQ(m.rfind(file + ": ", 0), 0u) << "message does not start with the file: " << m;
    EXPECT_NE(m.find(what), std::string::npos) << "message lacks '" << what << "': " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "message is not one line: " << m;
  }
}
void expect_error(const std::string& path, const std::string& what, ReadOptions opt = {}) {
  expect_error(path, path, what, opt);
}

ReadOptions rows(int64_t n) {
  ReadOptions o;
  o.max_rows = n;
  return o;
}

// ---- .npy -------------------------------------------------------------------

// A hand-written .npy (version 1.0): any descr, any shape, and a header
// length chosen so the data start at `align` modulo 64 (0 = numpy's padding).
void write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape,
               const std::vector<unsigned char>& data, bool fortran = false, size_t misalign = 0) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  s += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + s +
                     ", }";
  const size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64 + misalign, ' ');
  dict += '\n';
  const unsigned char magic[10] = {0x93,
                                   'N',
                                   'U',
                                   'M',
                                   'P',
                                   'Y',
                                   1,
                                   0,
                                   static_cast<unsigned char>(dict.size() & 0xff),
                                   static_cast<unsigned char>(dict.size() >> 8)};
  std::vector<unsigned char> out(10 + dict.size() + data.size());
  std::memcpy(out.data(), magic, 10);
  std::memcpy(out.data() + 10, dict.data(), dict.size());
  if (!data.empty()) std::memcpy(out.data() + 10 + dict.size(), data.data(), data.size());
  write_file(path, out);
}

struct NpyCase {
  Type type;
  const char* descr;
};
void PrintTo(const NpyCase& c, std::ostream* os) { *os << c.descr; }

class NpyTypes : public ::testing::TestWithParam<NpyCase> {};

TEST_P(NpyTypes, RoundTripNxD) {
  const auto [t, descr] = GetParam();
  TempDir dir;
  const std::string path = dir / "x.npy";
  const auto v = values(t, 7 * 5);
  write_npy(path, descr, {7, 5}, encode_all(t, v));
  Dataset ds = load_dataset(path);
  EXPECT_EQ(ds.rows(), 7);
  EXPECT_EQ(ds.cols(), 5);
  EXPECT_EQ(ds.source_dtype, t.name);
  EXPECT_EQ(ds.format, "npy");
  EXPECT_EQ(ds.source, path);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{5}));
  EXPECT_TRUE(ds.labels.empty());
  EXPECT_EQ(ds.memory_mapped(), std::string(t.name) == "float32");
  expect_values(ds, v);
}

TEST_P(NpyTypes, ImagesAndMaxRows) {
  const auto [t, descr] = GetParam();
  TempDir dir;
  const std::string path = dir / "x.npy";
  const auto v = values(t, 6 * 3 * 4, 1);
  write_npy(path, descr, {6, 3, 4}, encode_all(t, v));
  Dataset ds = load_dataset(path, rows(4));
  EXPECT_EQ(ds.rows(), 4);
  EXPECT_EQ(ds.cols(), 12);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{3, 4}));
  expect_values(ds, std::vector<double>(v.begin(), v.begin() + 4 * 12));
}

/// The values `v` of a C-order array of `shape` in the order a Fortran-order
/// file stores them (the axes reversed).
std::vector<double> fortran_order(const std::vector<double>& v, const std::vector<int64_t>& shape) {
  const int64_t a = shape[0], b = shape.size() == 3 ? shape[1] : 1, c = shape.back();
  std::vector<double> f(v.size());
  for (int64_t i0 = 0; i0 < a; ++i0)
    for (int64_t i1 = 0; i1 < b; ++i1)
      for (int64_t i2 = 0; i2 < c; ++i2)
        f[static_cast<size_t>(i0 + a * (i1 + b * i2))] = v[static_cast<size_t>((i0 * b + i1) * c + i2)];
  return f;
}

// What np.save writes for a transposed array (fortran_order: True, as
// scipy.io.loadmat's arrays are) and for a big-endian one ('>f4', as FITS
// data read by astropy are): read as the C-order, native values they stand
// for; the first rows only with max_rows; never memory-mapped.
TEST_P(NpyTypes, BigEndianAndFortranOrder) {
  const auto [t, descr] = GetParam();
  TempDir dir;
  const std::string big_descr = t.size > 1 ? ">" + std::string(descr + 1) : std::string(descr);
  const std::vector<int64_t> images = {6, 3, 5}, rows_of_d = {7, 4};
  const auto v = values(t, 6 * 3 * 5, 2);
  write_npy(dir / "big.npy", big_descr, images, encode_all(t, v, true));
  Dataset big = load_dataset(dir / "big.npy");
  EXPECT_FALSE(big.memory_mapped());
  EXPECT_EQ(big.source_dtype, std::string(t.name) + (t.size > 1 ? " (big-endian)" : ""));
  EXPECT_EQ(big.item_shape, (std::vector<int64_t>{3, 5}));
  expect_values(big, v);
  for (const bool big_endian : {false, true}) {
    const std::string d = big_endian ? big_descr : std::string(descr);
    write_npy(dir / "f3.npy", d, images, encode_all(t, fortran_order(v, images), big_endian), true);
    Dataset f3 = load_dataset(dir / "f3.npy");
    EXPECT_FALSE(f3.memory_mapped());
    EXPECT_EQ(f3.source_dtype,
              std::string(t.name) + (big_endian && t.size > 1 ? " (big-endian, Fortran order)" : " (Fortran order)"));
    EXPECT_EQ(f3.item_shape, (std::vector<int64_t>{3, 5}));
    expect_values(f3, v);
    f3 = load_dataset(dir / "f3.npy", rows(4));
    expect_values(f3, std::vector<double>(v.begin(), v.begin() + 4 * 15));
    const std::vector<double> w(v.begin(), v.begin() + 7 * 4);
    write_npy(dir / "f2.npy", d, rows_of_d, encode_all(t, fortran_order(w, rows_of_d), big_endian), true);
    Dataset f2 = load_dataset(dir / "f2.npy", rows(5));
    EXPECT_EQ(f2.cols(), 4);
    expect_values(f2, std::vector<double>(w.begin(), w.begin() + 5 * 4));
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, NpyTypes,
                         ::testing::Values(NpyCase{kF32, "<f4"}, NpyCase{kF64, "<f8"}, NpyCase{kU8, "|u1"},
                                           NpyCase{kU16, "<u2"}, NpyCase{kI16, "<i2"}, NpyCase{kI32, "<i4"},
                                           NpyCase{kF16, "<f2"}, NpyCase{kI8, "|i1"}, NpyCase{kU32, "<u4"},
                                           NpyCase{kI64, "<i8"}),
                         [](const auto& info) { return std::string(info.param.type.name); });

TEST(Npy, WrittenByNpyWrite) {
  TempDir dir;
  const std::string path = dir / "w.npy";
  std::vector<uint16_t> v(4 * 9);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(1000 + 977 * i);
  npy::write(path, v.data(), {4, 3, 3});
  Dataset ds = load_dataset(path);
  EXPECT_EQ(ds.rows(), 4);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(ds.source_dtype, "uint16");
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(ds.data()[i], static_cast<float>(v[i])) << i;
}

TEST(Npy, MisalignedFloat32IsCopied) {
  TempDir dir;
  const std::string path = dir / "m.npy";
  const auto v = values(kF32, 5 * 4);
  write_npy(path, "<f4", {5, 4}, encode_all(kF32, v), false, 2);
  Dataset ds = load_dataset(path);
  EXPECT_FALSE(ds.memory_mapped());
  expect_values(ds, v);
}

TEST(Npy, MemoryMappedMaxRows) {
  TempDir dir;
  const std::string path = dir / "f.npy";
  const auto v = values(kF32, 10 * 6, 3);
  write_npy(path, "<f4", {10, 6}, encode_all(kF32, v));
  Dataset ds = load_dataset(path, rows(3));
  EXPECT_TRUE(ds.memory_mapped());
  EXPECT_EQ(ds.rows(), 3);
  expect_values(ds, std::vector<double>(v.begin(), v.begin() + 18));
}

TEST(Npy, BadInputs) {
  TempDir dir;
  const auto v = values(kF32, 24);
  const auto bytes = encode_all(kF32, v);
  write_npy(dir / "one_d.npy", "<f4", {24}, bytes);
  expect_error(dir / "one_d.npy", "is 1-D");
  write_npy(dir / "four_d.npy", "<f4", {2, 3, 2, 2}, bytes);
  expect_error(dir / "four_d.npy", "is 4-D");
  write_npy(dir / "bool.npy", "|b1", {4, 6}, std::vector<unsigned char>(24, 1));
  expect_error(dir / "bool.npy", "unsupported dtype '|b1' (bool)");
  write_npy(dir / "complex.npy", "<c8", {3, 1}, bytes);
  expect_error(dir / "complex.npy", "unsupported dtype '<c8' (complex)");
  write_npy(dir / "big_complex.npy", ">c8", {3, 1}, bytes);
  expect_error(dir / "big_complex.npy", "unsupported dtype '>c8' (complex)");
  write_npy(dir / "trunc.npy", "<f4", {4, 6}, bytes);
  truncate_file(dir / "trunc.npy", fs::file_size(dir / "trunc.npy") - 10);
  expect_error(dir / "trunc.npy", "truncated: header says 24 elements of 4 bytes");
  write_npy(dir / "header.npy", "<f4", {4, 6}, bytes);
  truncate_file(dir / "header.npy", 40);
  expect_error(dir / "header.npy", "truncated .npy header");
  write_npy(dir / "empty.npy", "<f4", {0, 6}, {});
  expect_error(dir / "empty.npy", "contains no images");
  write_npy(dir / "nod.npy", "<f4", {4, 0}, {});
  expect_error(dir / "nod.npy", "hold no values");
  write_file(dir / "garbage.npy", std::vector<unsigned char>(100, 'x'));
  expect_error(dir / "garbage.npy", "bad magic");
  expect_error(dir / "missing.npy", "no such file");
}

TEST(Npy, NonFiniteValuesNameTheRow) {
  TempDir dir;
  auto v = values(kF64, 5 * 4);
  v[2 * 4 + 3] = std::nan("");
  write_npy(dir / "nan.npy", "<f8", {5, 4}, encode_all(kF64, v));
  expect_error(dir / "nan.npy", "row 2 holds a non-finite value (NaN at column 3)");
  auto w = values(kF32, 5 * 4);
  w[4 * 4] = -INFINITY;
  write_npy(dir / "inf.npy", "<f4", {5, 4}, encode_all(kF32, w));
  expect_error(dir / "inf.npy", "row 4 holds a non-finite value (-inf at column 0)");
  // Rows past max_rows are not read, so they cannot fail.
  EXPECT_EQ(load_dataset(dir / "inf.npy", rows(4)).rows(), 4);
}

TEST(Npy, DetectedByContentWithoutExtension) {
  TempDir dir;
  const auto v = values(kU8, 3 * 8);
  write_npy(dir / "noext", "|u1", {3, 8}, encode_all(kU8, v));
  Dataset ds = load_dataset(dir / "noext");
  EXPECT_EQ(ds.format, "npy");
  expect_values(ds, v);
}

TEST(Generic, UnknownAndEmptyFiles) {
  TempDir dir;
  write_file(dir / "notes.txt", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
  expect_error(dir / "notes.txt", "unrecognised dataset format");
  write_file(dir / "empty.bin", {});
  expect_error(dir / "empty.bin", "empty file");
  expect_error(dir / "nothing-here", "no such file or directory");
}

// ---- .npz -------------------------------------------------------------------

/// The bytes of a .npy file (write_npy's).
std::vector<unsigned char> npy_bytes(const TempDir& dir, const std::string& descr, const std::vector<int64_t>& shape,
                                     const std::vector<unsigned char>& data, bool fortran = false) {
  write_npy(dir / "member.npy", descr, shape, data, fortran);
  return read_file(dir / "member.npy");
}

/// An .npz as np.savez (stored) or np.savez_compressed (deflated) writes
/// it: one NAME.npy member per array, through minizip.
void write_npz(const std::string& path, const std::vector<std::pair<std::string, std::vector<unsigned char>>>& arrays,
               bool deflate) {
  zipFile z = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
  ASSERT_NE(z, nullptr);
  for (const auto& [name, bytes] : arrays) {
    zip_fileinfo info{};
    ASSERT_EQ(zipOpenNewFileInZip64(z, (name + ".npy").c_str(), &info, nullptr, 0, nullptr, 0, nullptr,
                                    deflate ? Z_DEFLATED : 0, deflate ? Z_DEFAULT_COMPRESSION : 0, 1),
              ZIP_OK);
    ASSERT_EQ(zipWriteInFileInZip(z, bytes.data(), static_cast<unsigned>(bytes.size())), ZIP_OK);
    ASSERT_EQ(zipCloseFileInZip(z), ZIP_OK);
  }
  ASSERT_EQ(zipClose(z, nullptr), ZIP_OK);
}

// The stack is the largest array (or the one --dataset names), its labels
// the integer array "labels" beside it, stored or deflated; max_rows reads
// the first rows and their labels.
TEST(Npz, TheLargestArrayAndItsLabels) {
  TempDir dir;
  const auto v = values(kF32, 6 * 3 * 5, 4), small = values(kF32, 2 * 2, 5);
  const std::vector<double> labels = {3, 1, 4, 1, 5, 9};
  const auto images = npy_bytes(dir, "<f4", {6, 3, 5}, encode_all(kF32, v));
  const auto label_bytes = npy_bytes(dir, "<i8", {6}, encode_all(kI64, labels));
  const auto other = npy_bytes(dir, "<f4", {2, 2}, encode_all(kF32, small));
  for (const bool deflate : {false, true}) {
    SCOPED_TRACE(deflate ? "deflated" : "stored");
    const std::string path = dir / (deflate ? "c.npz" : "s.npz");
    write_npz(path, {{"other", other}, {"images", images}, {"labels", label_bytes}}, deflate);
    Dataset ds = load_dataset(path);
    EXPECT_EQ(ds.format, "npz");
    EXPECT_EQ(ds.array, "images");
    EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{3, 5}));
    expect_values(ds, v);
    EXPECT_EQ(ds.labels, (std::vector<int32_t>{3, 1, 4, 1, 5, 9}));
    if (deflate) {
      EXPECT_FALSE(ds.memory_mapped());
    }
    ds = load_dataset(path, rows(4));
    expect_values(ds, std::vector<double>(v.begin(), v.begin() + 4 * 15));
    EXPECT_EQ(ds.labels, (std::vector<int32_t>{3, 1, 4, 1}));
    ReadOptions named;
    named.hdf5_dataset = "other";
    ds = load_dataset(path, named);
    EXPECT_EQ(ds.array, "other");
    expect_values(ds, small);
    EXPECT_TRUE(ds.labels.empty());  // not one a row of this array
    named.hdf5_dataset = "nope";
    expect_error(path, path, "no array 'nope' (it holds other, images, labels)", named);
    named.hdf5_dataset = "labels";
    expect_error(path, path + ":labels", "array of 1 axes", named);
  }
}

// np.savez of a transposed big-endian array (and any sample type) reads as
// its C-order values, like a .npy file.
TEST(Npz, FortranOrderBigEndianAndIntegers) {
  TempDir dir;
  const auto v = values(kU16, 4 * 3 * 2, 6);
  std::vector<double> f(v.size());  // element (i, j, l) at i + 4 (j + 3 l)
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 2; ++l)
        f[static_cast<size_t>(i + 4 * (j + 3 * l))] = v[static_cast<size_t>((i * 3 + j) * 2 + l)];
  write_npz(dir / "f.npz", {{"arr_0", npy_bytes(dir, ">u2", {4, 3, 2}, encode_all(kU16, f, true), true)}}, true);
  Dataset ds = load_dataset(dir / "f.npz");
  EXPECT_EQ(ds.source_dtype, "uint16 (big-endian, Fortran order)");
  expect_values(ds, v);
  // "labels" of values no class number takes (found by fuzz_npz: their
  // conversion to int32 overflowed) are not labels.
  const auto images = npy_bytes(dir, "<f4", {3, 2}, encode_all(kF32, values(kF32, 6)));
  write_npz(dir / "l.npz", {{"images", images}, {"labels", npy_bytes(dir, "<i8", {3}, encode_all(kI64, {1, 2e12, 3}))}},
            false);
  EXPECT_TRUE(load_dataset(dir / "l.npz").labels.empty());
}

// Broken archives fail in one line naming the file (and the array).
TEST(Npz, BadArchives) {
  TempDir dir;
  write_file(dir / "notzip.npz", std::vector<unsigned char>(100, 7));
  expect_error(dir / "notzip.npz", "not a readable zip archive");
  const std::vector<unsigned char> text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
  write_npz(dir / "text.npz", {{"images", text}}, false);
  expect_error(dir / "text.npz", dir / "text.npz:images", "not a .npy file");
  // A header announcing more rows than the member holds.
  auto bytes = npy_bytes(dir, "<f4", {6, 4}, encode_all(kF32, values(kF32, 24)));
  bytes.resize(bytes.size() - 8);
  write_npz(dir / "short.npz", {{"images", bytes}}, true);
  expect_error(dir / "short.npz", dir / "short.npz:images", "truncated: header says 24 elements");
  // Deflated data damaged in the middle.
  const auto big = npy_bytes(dir, "<f4", {64, 64}, encode_all(kF32, values(kF32, 64 * 64, 9)));
  write_npz(dir / "bad.npz", {{"images", big}}, true);
  auto archive = read_file(dir / "bad.npz");
  for (size_t i = 200; i < 260; ++i) archive[i] ^= 0x5a;
  write_file(dir / "bad.npz", archive);
  expect_error(dir / "bad.npz", dir / "bad.npz:images", "corrupt");
  // A directory saying a stored array holds more than its stored bytes:
  // its uncompressed size, at byte 22 of the local header and 24 of the
  // central directory's entry, both 1 GiB more.
  write_npz(dir / "lie.npz", {{"images", big}}, false);
  auto lie = read_file(dir / "lie.npz");
  for (const auto& [signature, at] : {std::pair{std::array<unsigned char, 4>{'P', 'K', 3, 4}, 22},
                                      std::pair{std::array<unsigned char, 4>{'P', 'K', 1, 2}, 24}}) {
    const auto header = std::search(lie.begin(), lie.end(), signature.begin(), signature.end());
    ASSERT_NE(header, lie.end());
    header[at + 3] = static_cast<unsigned char>(header[at + 3] + 0x40);
  }
  write_file(dir / "lie.npz", lie);
  expect_error(dir / "lie.npz", dir / "lie.npz:images", "corrupt zip directory");
  // No name it knows: found by its first bytes.
  write_npz(dir / "plain", {{"images", big}}, false);
  EXPECT_EQ(load_dataset(dir / "plain").format, "npz");
}

// ---- MNIST IDX --------------------------------------------------------------

std::vector<unsigned char> idx_bytes(int type_code, const std::vector<uint32_t>& dims,
                                     const std::vector<unsigned char>& data) {
  std::vector<unsigned char> out = {0, 0, static_cast<unsigned char>(type_code),
                                    static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<unsigned char>(d >> s));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_gz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

struct Mnist {
  std::vector<double> pixels;
  std::vector<unsigned char> labels;
};

// 9 images of 4x3 with labels 0..9, written as X-images-idx3-ubyte[.gz]
// beside X-labels-idx1-ubyte[.gz].
Mnist write_mnist(const TempDir& dir, bool gz_images, bool gz_labels) {
  Mnist m;
  m.pixels = values(kU8, 9 * 12, 5);
  for (int i = 0; i < 9; ++i) m.labels.push_back(static_cast<unsigned char>((i * 7 + 3) % 10));
  const auto img = idx_bytes(0x08, {9, 4, 3}, encode_all(kU8, m.pixels));
  const auto lab = idx_bytes(0x08, {9}, m.labels);
  if (gz_images) write_gz(dir / "t-images-idx3-ubyte.gz", img);
  else
    write_file(dir / "t-images-idx3-ubyte", img);
  if (gz_labels) write_gz(dir / "t-labels-idx1-ubyte.gz", lab);
  else
    write_file(dir / "t-labels-idx1-ubyte", lab);
  return m;
}

void expect_mnist(const Dataset& ds, const Mnist& m, int64_t n) {
  EXPECT_EQ(ds.rows(), n);
  EXPECT_EQ(ds.cols(), 12);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(ds.format, "idx");
  EXPECT_EQ(ds.source_dtype, "uint8");
  expect_values(ds, std::vector<double>(m.pixels.begin(), m.pixels.begin() + n * 12));
  ASSERT_EQ(ds.labels.size(), static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(ds.labels[static_cast<size_t>(i)], m.labels[static_cast<size_t>(i)]) << i;
}

TEST(Idx, PlainWithLabels) {
  TempDir dir;
  auto m = write_mnist(dir, false, false);
  expect_mnist(load_dataset(dir / "t-images-idx3-ubyte"), m, 9);
}

TEST(Idx, GzipWithLabelsAndMaxRows) {
  TempDir dir;
  auto m = write_mnist(dir, true, true);
  expect_mnist(load_dataset(dir / "t-images-idx3-ubyte.gz"), m, 9);
  expect_mnist(load_dataset(dir / "t-images-idx3-ubyte.gz", rows(4)), m, 4);
}

TEST(Idx, GzipImagesPlainLabels) {
  TempDir dir;
  auto m = write_mnist(dir, true, false);
  expect_mnist(load_dataset(dir / "t-images-idx3-ubyte.gz"), m, 9);
}

TEST(Idx, NoLabelsFileMeansNoLabels) {
  TempDir dir;
  write_mnist(dir, false, false);
  fs::remove(dir / "t-labels-idx1-ubyte");
  Dataset ds = load_dataset(dir / "t-images-idx3-ubyte");
  EXPECT_EQ(ds.rows(), 9);
  EXPECT_TRUE(ds.labels.empty());
}

TEST(Idx, BigEndianFloatsAndVectors) {
  TempDir dir;
  const auto v = values(kF32, 5 * 7, 2);
  write_file(dir / "f.idx", idx_bytes(0x0D, {5, 7}, encode_all(kF32, v, true)));
  Dataset ds = load_dataset(dir / "f.idx");
  EXPECT_EQ(ds.source_dtype, "float32");
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{7}));
  expect_values(ds, v);
  const auto w = values(kI16, 3 * 2 * 2, 4);
  write_file(dir / "s.idx", idx_bytes(0x0B, {3, 2, 2}, encode_all(kI16, w, true)));
  Dataset ds2 = load_dataset(dir / "s.idx");
  EXPECT_EQ(ds2.source_dtype, "int16");
  expect_values(ds2, w);
}

TEST(Idx, BadInputs) {
  TempDir dir;
  auto m = write_mnist(dir, false, true);
  expect_error(dir / "t-labels-idx1-ubyte.gz", "1-D IDX");
  auto img = read_file(dir / "t-images-idx3-ubyte");
  write_file(dir / "short-images-idx3-ubyte", std::vector<unsigned char>(img.begin(), img.end() - 5));
  expect_error(dir / "short-images-idx3-ubyte", "truncated");
  write_gz(dir / "shortgz-images-idx3-ubyte.gz", std::vector<unsigned char>(img.begin(), img.end() - 13));
  expect_error(dir / "shortgz-images-idx3-ubyte.gz", "truncated");
  // A gzip stream cut in the middle.
  write_gz(dir / "cut-images-idx3-ubyte.gz", img);
  truncate_file(dir / "cut-images-idx3-ubyte.gz", fs::file_size(dir / "cut-images-idx3-ubyte.gz") / 2);
  expect_error(dir / "cut-images-idx3-ubyte.gz", "truncated");
  auto bad = img;
  bad[0] = 7;
  write_file(dir / "magic-images-idx3-ubyte", bad);
  expect_error(dir / "magic-images-idx3-ubyte", "bad magic");
  bad = img;
  bad[2] = 0x42;
  write_file(dir / "type-images-idx3-ubyte", bad);
  expect_error(dir / "type-images-idx3-ubyte", "element type 0x42");
  write_file(dir / "hdr-images-idx3-ubyte", std::vector<unsigned char>(img.begin(), img.begin() + 9));
  expect_error(dir / "hdr-images-idx3-ubyte", "truncated IDX header");
}

TEST(Idx, FashionMnistTestImages) {
  const std::string path = testing_support::fashion_mnist_dir() + "/t10k-images-idx3-ubyte.gz";
  if (!fs::exists(path)) GTEST_SKIP() << "dataset-fashion-mnist is not installed (" << path << ")";
  Dataset ds = load_dataset(path);
  EXPECT_EQ(ds.rows(), 10000);
  EXPECT_EQ(ds.cols(), 784);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{28, 28}));
  auto [lo, hi] = ds.value_range();
  EXPECT_EQ(lo, 0.f);
  EXPECT_EQ(hi, 255.f);
  ASSERT_EQ(ds.labels.size(), 10000u);
  std::vector<int> per_class(10, 0);
  for (int32_t l : ds.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LE(l, 9);
    ++per_class[static_cast<size_t>(l)];
  }
  for (int c = 0; c < 10; ++c) EXPECT_EQ(per_class[static_cast<size_t>(c)], 1000) << "class " << c;
}

// ---- PNG --------------------------------------------------------------------

// Writes a PNG with libpng from `samples` (w*h*channels values, stored as
// given: 16-bit ones big-endian as PNG wants, 1-bit ones packed).
void write_png(const std::string& path, int w, int h, int color_type, int depth, const std::vector<int>& samples,
               const std::vector<png_color>& palette = {}, bool interlaced = false) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), depth, color_type,
               interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  png_write_info(png, info);
  const int channels = samples.size() / static_cast<size_t>(w * h);
  const size_t row_bytes = static_cast<size_t>((w * channels * depth + 7) / 8);
  std::vector<unsigned char> buf(row_bytes * static_cast<size_t>(h), 0);
  for (int y = 0; y < h; ++y)
    for (int i = 0; i < w * channels; ++i) {
      const int v = samples[static_cast<size_t>(y * w * channels + i)];
      unsigned char* row = buf.data() + static_cast<size_t>(y) * row_bytes;
      if (depth == 16) {
        row[2 * i] = static_cast<unsigned char>(v >> 8);
        row[2 * i + 1] = static_cast<unsigned char>(v & 0xff);
      } else if (depth == 8) {
        row[i] = static_cast<unsigned char>(v);
      } else if (depth == 1) {
        if (v) row[i / 8] |= static_cast<unsigned char>(0x80 >> (i % 8));
      }
    }
  std::vector<png_bytep> rows(static_cast<size_t>(h));
  for (int y = 0; y < h; ++y) rows[static_cast<size_t>(y)] = buf.data() + static_cast<size_t>(y) * row_bytes;
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

std::vector<int> int_samples(const Type& t, int64_t count, int64_t seed) {
  std::vector<int> s;
  for (double v : values(t, count, seed)) s.push_back(static_cast<int>(v));
  return s;
}

std::vector<double> as_double(const std::vector<int>& v) { return {v.begin(), v.end()}; }

TEST(PngFolder, Gray8SortedByNameSkippingOtherFiles) {
  TempDir dir;
  const int w = 5, h = 4;
  std::vector<std::vector<int>> img;
  for (int k = 0; k < 3; ++k) img.push_back(int_samples(kU8, w * h, 10 + k));
  // Written out of order: the folder order is the file-name order.
  write_png(dir / "img_b.png", w, h, PNG_COLOR_TYPE_GRAY, 8, img[1]);
  write_png(dir / "img_c.PNG", w, h, PNG_COLOR_TYPE_GRAY, 8, img[2], {}, true);
  write_png(dir / "img_a.png", w, h, PNG_COLOR_TYPE_GRAY, 8, img[0]);
  write_file(dir / "notes.txt", {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'});
  write_file(dir / ".hidden.png", {'x'});
  fs::create_directory(dir / "sub.png");
  Dataset ds = load_dataset(dir.path);
  EXPECT_EQ(ds.rows(), 3);
  EXPECT_EQ(ds.cols(), w * h);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{h, w}));
  EXPECT_EQ(ds.source_dtype, "uint8");
  EXPECT_EQ(ds.format, "png");
  std::vector<double> all;
  for (auto& i : img) all.insert(all.end(), i.begin(), i.end());
  expect_values(ds, all);
  EXPECT_EQ(ds.item_names, (std::vector<std::string>{"img_a.png", "img_b.png", "img_c.PNG"}));
}

TEST(PngFolder, Gray16AndMaxRowsReadsOnlyThoseFiles) {
  TempDir dir;
  const int w = 3, h = 6;
  auto a = int_samples(kU16, w * h, 1), b = int_samples(kU16, w * h, 2);
  write_png(dir / "01.png", w, h, PNG_COLOR_TYPE_GRAY, 16, a);
  write_png(dir / "02.png", w, h, PNG_COLOR_TYPE_GRAY, 16, b);
  write_file(dir / "03.png", {'n', 'o', 't', ' ', 'p', 'n', 'g'});  // never opened with max_rows = 2
  Dataset ds = load_dataset(dir.path, rows(2));
  EXPECT_EQ(ds.rows(), 2);
  EXPECT_EQ(ds.source_dtype, "uint16");
  auto all = as_double(a);
  all.insert(all.end(), b.begin(), b.end());
  expect_values(ds, all);
  expect_error(dir.path, dir / "03.png", "not a PNG file");
}

TEST(PngFolder, ColourBecomesRec709Luma) {
  TempDir dir;
  const int w = 4, h = 3;
  auto rgb = int_samples(kU8, w * h * 3, 7), rgba = int_samples(kU8, w * h * 4, 8);
  write_png(dir / "a_rgb.png", w, h, PNG_COLOR_TYPE_RGB, 8, rgb);
  write_png(dir / "b_rgba.png", w, h, PNG_COLOR_TYPE_RGB_ALPHA, 8, rgba);
  std::vector<png_color> palette;
  for (int i = 0; i < 4; ++i)
    palette.push_back({static_cast<png_byte>(40 + 50 * i), static_cast<png_byte>(200 - 30 * i),
                       static_cast<png_byte>(17 * i + 5)});
  std::vector<int> index;
  for (int i = 0; i < w * h; ++i) index.push_back((i * 3 + 1) % 4);
  write_png(dir / "c_palette.png", w, h, PNG_COLOR_TYPE_PALETTE, 8, index, palette);
  Dataset ds = load_dataset(dir.path);
  ASSERT_EQ(ds.rows(), 3);
  EXPECT_EQ(ds.source_dtype, "uint8");
  auto luma = [](double r, double g, double b) { return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  std::vector<double> want;
  for (int i = 0; i < w * h; ++i) want.push_back(luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]));
  for (int i = 0; i < w * h; ++i) want.push_back(luma(rgba[4 * i], rgba[4 * i + 1], rgba[4 * i + 2]));
  for (int i = 0; i < w * h; ++i) {
    const png_color& c = palette[static_cast<size_t>(index[static_cast<size_t>(i)])];
    want.push_back(luma(c.red, c.green, c.blue));
  }
  expect_values(ds, want, 1e-5f);
}

TEST(PngFolder, OneBitGrayIsWidened) {
  TempDir dir;
  std::vector<int> bits;
  for (int i = 0; i < 9 * 2; ++i) bits.push_back((i * 5) % 3 == 0);
  write_png(dir / "bits.png", 9, 2, PNG_COLOR_TYPE_GRAY, 1, bits);
  Dataset ds = load_dataset(dir / "bits.png");
  EXPECT_EQ(ds.rows(), 1);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{2, 9}));
  std::vector<double> want;
  for (int b : bits) want.push_back(b ? 255 : 0);
  expect_values(ds, want);
}

TEST(PngFolder, BadInputs) {
  TempDir dir;
  expect_error(dir.path, "folder holds no PNG or TIFF images");
  write_file(dir / "readme.txt", {'x'});
  expect_error(dir.path, "folder holds no PNG or TIFF images");

  TempDir sizes;
  write_png(sizes / "a.png", 5, 4, PNG_COLOR_TYPE_GRAY, 8, int_samples(kU8, 20, 1));
  write_png(sizes / "b.png", 5, 4, PNG_COLOR_TYPE_GRAY, 8, int_samples(kU8, 20, 2));
  write_png(sizes / "c.png", 4, 5, PNG_COLOR_TYPE_GRAY, 8, int_samples(kU8, 20, 3));
  write_png(sizes / "d.png", 6, 6, PNG_COLOR_TYPE_GRAY, 8, int_samples(kU8, 36, 4));
  expect_error(sizes.path, sizes / "c.png", "is 4x5 pixels but " + (sizes / "a.png") + " is 5x4");
  EXPECT_EQ(load_dataset(sizes.path, rows(2)).rows(), 2);  // the odd ones are beyond max_rows

  TempDir depth;
  write_png(depth / "a.png", 3, 3, PNG_COLOR_TYPE_GRAY, 8, int_samples(kU8, 9, 1));
  write_png(depth / "b.png", 3, 3, PNG_COLOR_TYPE_GRAY, 16, int_samples(kU16, 9, 2));
  expect_error(depth.path, depth / "b.png", "holds uint16 samples but");

  TempDir broken;
  write_png(broken / "a.png", 8, 8, PNG_COLOR_TYPE_GRAY, 8, int_samples(kU8, 64, 1));
  auto bytes = read_file(broken / "a.png");
  write_file(broken / "b.png", std::vector<unsigned char>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  expect_error(broken.path, broken / "b.png", "PNG");
  bytes[bytes.size() - 20] ^= 0x5a;  // inside the IDAT chunk: its CRC no longer matches
  write_file(broken / "b.png", bytes);
  expect_error(broken.path, broken / "b.png", "corrupt");
}

// ---- TIFF -------------------------------------------------------------------

struct TiffPage {
  uint32_t w, h;
  Type type;
  std::vector<double> v;
  uint16_t spp = 1;
  bool tiled = false;
  uint16_t compression = COMPRESSION_NONE;
  uint32_t subfile = 0;  // FILETYPE_REDUCEDIMAGE marks a thumbnail
};

void write_tiff(const std::string& path, const std::vector<TiffPage>& pages) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(t, nullptr);
  for (const auto& p : pages) {
    const auto bytes = encode_all(p.type, p.v);
    const uint16_t format = p.type.is_float    ? SAMPLEFORMAT_IEEEFP
                            : p.type.is_signed ? SAMPLEFORMAT_INT
                                               : SAMPLEFORMAT_UINT;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, p.w);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, p.h);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<uint16_t>(8 * p.type.size));
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, p.spp);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, format);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, p.spp == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_COMPRESSION, p.compression);
    if (pages.size() > 1) {
      TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE | p.subfile);
      TIFFSetField(t, TIFFTAG_PAGENUMBER, static_cast<uint16_t>(&p - pages.data()),
                   static_cast<uint16_t>(pages.size()));
    }
    const size_t px = p.type.size * p.spp;
    if (p.tiled) {
      const uint32_t tw = 16, th = 16;
      TIFFSetField(t, TIFFTAG_TILEWIDTH, tw);
      TIFFSetField(t, TIFFTAG_TILELENGTH, th);
      std::vector<unsigned char> tile(tw * th * px);
      for (uint32_t y = 0; y < p.h; y += th)
        for (uint32_t x = 0; x < p.w; x += tw) {
          std::fill(tile.begin(), tile.end(), 0xEE);  // padding outside the image must be ignored
          for (uint32_t r = 0; r < th && y + r < p.h; ++r)
            for (uint32_t c = 0; c < tw && x + c < p.w; ++c)
              std::memcpy(tile.data() + (r * tw + c) * px, bytes.data() + ((y + r) * p.w + x + c) * px, px);
          ASSERT_GE(TIFFWriteTile(t, tile.data(), x, y, 0, 0), 0);
        }
    } else {
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 2u);
      for (uint32_t y = 0; y < p.h; ++y)
        ASSERT_EQ(TIFFWriteScanline(t, const_cast<unsigned char*>(bytes.data() + y * p.w * px), y, 0), 1);
    }
    ASSERT_TRUE(TIFFWriteDirectory(t));
  }
  TIFFClose(t);
}

class TiffTypes : public ::testing::TestWithParam<Type> {};

TEST_P(TiffTypes, MultiPageRoundTrip) {
  const Type t = GetParam();
  TempDir dir;
  std::vector<TiffPage> pages;
  std::vector<double> all;
  for (int k = 0; k < 3; ++k) {
    pages.push_back({7, 5, t, values(t, 35, k + 20)});
    all.insert(all.end(), pages.back().v.begin(), pages.back().v.end());
  }
  write_tiff(dir / "stack.tif", pages);
  Dataset ds = load_dataset(dir / "stack.tif");
  EXPECT_EQ(ds.rows(), 3);
  EXPECT_EQ(ds.cols(), 35);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(ds.source_dtype, t.name);
  EXPECT_EQ(ds.format, "tiff");
  expect_values(ds, all);
  Dataset two = load_dataset(dir / "stack.tif", rows(2));
  EXPECT_EQ(two.rows(), 2);
  expect_values(two, std::vector<double>(all.begin(), all.begin() + 70));
}

INSTANTIATE_TEST_SUITE_P(SampleTypes, TiffTypes, ::testing::Values(kU8, kU16, kI16, kU32, kI32, kF32),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Tiff, TiledAndCompressed) {
  TempDir dir;
  std::vector<TiffPage> pages;
  std::vector<double> all;
  for (int k = 0; k < 2; ++k) {
    pages.push_back({20, 18, kU16, values(kU16, 20 * 18, k + 40), 1, true, COMPRESSION_ADOBE_DEFLATE});
    all.insert(all.end(), pages.back().v.begin(), pages.back().v.end());
  }
  write_tiff(dir / "tiled.tiff", pages);
  Dataset ds = load_dataset(dir / "tiled.tiff");
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{18, 20}));
  expect_values(ds, all);

  pages = {{9, 7, kF32, values(kF32, 63, 50), 1, false, COMPRESSION_LZW}};
  write_tiff(dir / "lzw.tif", pages);
  expect_values(load_dataset(dir / "lzw.tif"), pages[0].v);
}

TEST(Tiff, ThumbnailPagesAreSkipped) {
  TempDir dir;
  TiffPage a{8, 6, kU8, values(kU8, 48, 1)}, thumb{4, 3, kU8, values(kU8, 12, 2)}, b{8, 6, kU8, values(kU8, 48, 3)};
  thumb.subfile = FILETYPE_REDUCEDIMAGE;
  write_tiff(dir / "with-thumbnail.tif", {a, thumb, b});
  Dataset ds = load_dataset(dir / "with-thumbnail.tif");
  EXPECT_EQ(ds.rows(), 2);
  auto all = a.v;
  all.insert(all.end(), b.v.begin(), b.v.end());
  expect_values(ds, all);
}

TEST(Tiff, FolderOfSinglePageTiffs) {
  TempDir dir;
  std::vector<double> all;
  for (int k = 0; k < 4; ++k) {
    TiffPage p{6, 4, kF32, values(kF32, 24, 60 + k)};
    write_tiff(dir / ("frame" + std::to_string(k) + ".tiff"), {p});
    all.insert(all.end(), p.v.begin(), p.v.end());
  }
  Dataset ds = load_dataset(dir.path);
  EXPECT_EQ(ds.rows(), 4);
  EXPECT_EQ(ds.format, "tiff");
  EXPECT_EQ(ds.source_dtype, "float32");
  expect_values(ds, all);
  write_tiff(dir / "frame9.tif", {TiffPage{4, 6, kF32, values(kF32, 24, 70)}});
  expect_error(dir.path, dir / "frame9.tif", "is 4x6 pixels but " + (dir / "frame0.tiff") + " is 6x4");
}

// Numbered files without zero padding come in the order a file browser
// lists them (img2 before img10: runs of digits compare as numbers), and
// every row is named by its file, a multi-page TIFF's by file and page;
// the names follow max_rows and a transform.
TEST(Tiff, FolderInNaturalOrderWithRowNames) {
  TempDir dir;
  std::map<std::string, std::vector<double>> pages;
  int seed = 80;
  for (const char* name : {"img10.tif", "img2.tif", "img1.tif", "img010a.tif", "img9.tif", "IMG3.tif"}) {
    pages[name] = values(kF32, 24, seed++);
    write_tiff(dir / name, {TiffPage{6, 4, kF32, pages[name]}});
  }
  const std::vector<double> p1 = values(kF32, 24, 90), p2 = values(kF32, 24, 91);
  write_tiff(dir / "img100.tif", {TiffPage{6, 4, kF32, p1}, TiffPage{6, 4, kF32, p2}});
  const std::vector<std::string> order = {"IMG3.tif",  "img1.tif",    "img2.tif",  "img9.tif",
                                          "img10.tif", "img010a.tif", "img100.tif"};
  Dataset ds = load_dataset(dir.path);
  ASSERT_EQ(ds.rows(), 8);
  EXPECT_EQ(ds.item_names, (std::vector<std::string>{"IMG3.tif", "img1.tif", "img2.tif", "img9.tif", "img10.tif",
                                                     "img010a.tif", "img100.tif, page 1", "img100.tif, page 2"}));
  std::vector<double> all;
  for (size_t i = 0; i + 1 < order.size(); ++i) all.insert(all.end(), pages[order[i]].begin(), pages[order[i]].end());
  all.insert(all.end(), p1.begin(), p1.end());
  all.insert(all.end(), p2.begin(), p2.end());
  expect_values(ds, all);
  ReadOptions first3;
  first3.max_rows = 3;
  EXPECT_EQ(load_dataset(dir.path, first3).item_names, (std::vector<std::string>{"IMG3.tif", "img1.tif", "img2.tif"}));
  EXPECT_EQ(transformed(ds, "anscombe").item_names, ds.item_names);
}

// item_names_of gives the reader's names from the listing and the page
// headers alone: a thumbnail page (reduced resolution) names no row, a PNG
// among TIFFs is one row, and no image is decoded (a file that is no image
// but has a PNG name still names its row, where the reader would refuse it).
TEST(Tiff, ItemNamesOfAFolderWithoutReadingIt) {
  TempDir dir;
  TiffPage thumb{3, 2, kU8, values(kU8, 6, 2)};
  thumb.subfile = FILETYPE_REDUCEDIMAGE;
  write_tiff(dir / "b2.tif", {TiffPage{6, 4, kU8, values(kU8, 24, 1)}, thumb, TiffPage{6, 4, kU8, values(kU8, 24, 3)}});
  write_tiff(dir / "b10.tif", {TiffPage{6, 4, kU8, values(kU8, 24, 4)}});
  write_png(dir / "a, \"quoted\" .png", 6, 4, PNG_COLOR_TYPE_GRAY, 8, int_samples(kU8, 24, 5));
  const std::vector<std::string> expected = {"a, \"quoted\" .png", "b2.tif, page 1", "b2.tif, page 2", "b10.tif"};
  EXPECT_EQ(load_dataset(dir.path).item_names, expected);
  EXPECT_EQ(item_names_of(dir.path), expected);
  write_file(dir / "c.png", {'n', 'o', 't', ' ', 'p', 'n', 'g'});
  EXPECT_EQ(item_names_of(dir.path).back(), "c.png");
  // A file names no rows; a folder without images is load_dataset's error.
  EXPECT_TRUE(item_names_of(dir / "b10.tif").empty());
  TempDir empty;
  EXPECT_NE(testing_support::message_of([&] { item_names_of(empty.path); }).find("holds no PNG or TIFF images"),
            std::string::npos);
}

TEST(Tiff, BadInputs) {
  TempDir dir;
  write_tiff(dir / "sizes.tif", {TiffPage{5, 5, kU8, values(kU8, 25, 1)}, TiffPage{5, 5, kU8, values(kU8, 25, 2)},
                                 TiffPage{5, 6, kU8, values(kU8, 30, 3)}});
  expect_error(dir / "sizes.tif", "page 3 is 5x6 pixels but page 1 is 5x5");
  write_tiff(dir / "types.tif", {TiffPage{5, 5, kU8, values(kU8, 25, 1)}, TiffPage{5, 5, kU16, values(kU16, 25, 2)}});
  expect_error(dir / "types.tif", "page 2 holds uint16 samples but page 1 holds uint8");
  write_tiff(dir / "rgb.tif", {TiffPage{4, 4, kU8, values(kU8, 48, 1), 3}});
  expect_error(dir / "rgb.tif", "3 samples per pixel");
  write_tiff(dir / "double.tif", {TiffPage{4, 4, kI64, values(kI64, 16, 1)}});
  expect_error(dir / "double.tif", "64-bit signed integer samples");
  write_tiff(dir / "whole.tif",
             {TiffPage{40, 30, kU16, values(kU16, 1200, 1)}, TiffPage{40, 30, kU16, values(kU16, 1200, 2)}});
  auto bytes = read_file(dir / "whole.tif");
  write_file(dir / "cut.tif", std::vector<unsigned char>(bytes.begin(), bytes.begin() + 1500));
  expect_error(dir / "cut.tif", "corrupt");
  write_file(dir / "magic.tif", {'P', 'K', 3, 4, 0, 0, 0, 0, 1, 2, 3, 4});
  expect_error(dir / "magic.tif", "not a TIFF file (bad magic)");
  expect_error(dir / "missing.tif", "no such file");
}

// ---- MRC --------------------------------------------------------------------

void put32(std::vector<unsigned char>& h, size_t offset, int32_t v, bool big) {
  for (int j = 0; j < 4; ++j)
    h[offset + static_cast<size_t>(j)] = static_cast<unsigned char>(static_cast<uint32_t>(v) >>
                                                                    (big ? 24 - 8 * j : 8 * j));
}

std::vector<unsigned char> mrc_bytes(int nx, int ny, int nz, int mode, int nsymbt,
                                     const std::vector<unsigned char>& data, bool big = false, bool stamp = true) {
  std::vector<unsigned char> h(1024, 0);
  put32(h, 0, nx, big);
  put32(h, 4, ny, big);
  put32(h, 8, nz, big);
  put32(h, 12, mode, big);
  put32(h, 28, nx, big);  // mx, my, mz: sampling, as writers set them
  put32(h, 32, ny, big);
  put32(h, 36, nz, big);
  put32(h, 88, 1, big);  // ispg 0 would say "image stack"; either is read the same
  put32(h, 92, nsymbt, big);
  std::memcpy(h.data() + 104, "FEI1", 4);
  put32(h, 108, 20140, big);
  if (stamp) std::memcpy(h.data() + 208, "MAP ", 4);
  h[212] = big ? 0x11 : 0x44;
  h[213] = big ? 0x11 : 0x44;
  std::memcpy(h.data() + 224, "written by test_readers", 23);
  h.resize(1024 + static_cast<size_t>(nsymbt) + data.size());
  for (int i = 0; i < nsymbt; ++i)
    h[1024 + static_cast<size_t>(i)] = static_cast<unsigned char>(0xA0 + i % 50);  // extended header
  if (!data.empty()) std::memcpy(h.data() + 1024 + nsymbt, data.data(), data.size());
  return h;
}

struct MrcCase {
  int mode;
  Type type;
};
void PrintTo(const MrcCase& c, std::ostream* os) { *os << "mode " << c.mode << " (" << c.type.name << ")"; }

class MrcModes : public ::testing::TestWithParam<MrcCase> {};

TEST_P(MrcModes, StackRoundTrip) {
  const auto [mode, t] = GetParam();
  TempDir dir;
  const int nx = 6, ny = 5, nz = 4;
  const auto v = values(t, nx * ny * nz, mode + 80);
  write_file(dir / "stack.mrcs", mrc_bytes(nx, ny, nz, mode, 2 * 128, encode_all(t, v)));
  Dataset ds = load_dataset(dir / "stack.mrcs");
  EXPECT_EQ(ds.rows(), nz);
  EXPECT_EQ(ds.cols(), nx * ny);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{ny, nx}));
  EXPECT_EQ(ds.source_dtype, t.name);
  EXPECT_EQ(ds.format, "mrc");
  EXPECT_EQ(ds.memory_mapped(), mode == 2);
  expect_values(ds, v);
  Dataset part = load_dataset(dir / "stack.mrcs", rows(3));
  EXPECT_EQ(part.rows(), 3);
  expect_values(part, std::vector<double>(v.begin(), v.begin() + 3 * nx * ny));
}

INSTANTIATE_TEST_SUITE_P(Modes, MrcModes,
                         ::testing::Values(MrcCase{0, kI8}, MrcCase{1, kI16}, MrcCase{2, kF32}, MrcCase{6, kU16},
                                           MrcCase{12, kF16}),
                         [](const auto& info) { return "mode" + std::to_string(info.param.mode); });

TEST(Mrc, BigEndianAndHalfSubnormal) {
  TempDir dir;
  const auto v = values(kI16, 3 * 4 * 2, 9);
  write_file(dir / "big.mrc", mrc_bytes(3, 4, 2, 1, 0, encode_all(kI16, v, true), true));
  Dataset ds = load_dataset(dir / "big.mrc");
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{4, 3}));
  expect_values(ds, v);
  const auto f = values(kF32, 3 * 4 * 2, 10);
  write_file(dir / "bigf.mrc", mrc_bytes(3, 4, 2, 2, 0, encode_all(kF32, f, true), true));
  Dataset dsf = load_dataset(dir / "bigf.mrc");
  EXPECT_FALSE(dsf.memory_mapped());
  expect_values(dsf, f);
  // float16 subnormals and signs: 0x0010 = 2^-20, 0x8001 = -2^-24, 0x7bff = 65504.
  write_file(dir / "half.mrc", mrc_bytes(3, 1, 1, 12, 0, {0x10, 0x00, 0x01, 0x80, 0xff, 0x7b}));
  expect_values(load_dataset(dir / "half.mrc"), {std::ldexp(1.0, -20), -std::ldexp(1.0, -24), 65504.0});
}

TEST(Mrc, BadInputs) {
  TempDir dir;
  const auto v = encode_all(kF32, values(kF32, 6 * 5 * 4, 1));
  auto full = mrc_bytes(6, 5, 4, 2, 0, v);
  write_file(dir / "cut.mrc", std::vector<unsigned char>(full.begin(), full.end() - 7));
  expect_error(dir / "cut.mrc", "truncated");
  write_file(dir / "hdr.mrc", std::vector<unsigned char>(full.begin(), full.begin() + 500));
  expect_error(dir / "hdr.mrc", "truncated: an MRC header is 1024 bytes");
  auto ext = full;
  put32(ext, 92, 4096, false);  // an extended header that would swallow the data
  write_file(dir / "ext.mrcs", ext);
  expect_error(dir / "ext.mrcs", "truncated");
  write_file(dir / "complex.mrc", mrc_bytes(3, 5, 4, 4, 0, v));
  expect_error(dir / "complex.mrc", "MRC mode 4 (complex float32) is not supported");
  write_file(dir / "garbage.mrc", std::vector<unsigned char>(2000, 0x7f));
  expect_error(dir / "garbage.mrc", "not an MRC file");
  write_file(dir / "dims.mrc", mrc_bytes(-6, 5, 4, 2, 0, v));
  expect_error(dir / "dims.mrc", "corrupt MRC header");
  write_file(dir / "none.mrc", mrc_bytes(6, 5, 0, 2, 0, {}));
  expect_error(dir / "none.mrc", "contains no images");
}

// ---- HDF5 / CXI -------------------------------------------------------------

// A new HDF5 file; datasets are added with their parent groups.
class H5Writer {
 public:
  explicit H5Writer(const std::string& path) {
    file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  }
  ~H5Writer() { H5Fclose(file_); }
  hid_t file() const { return file_; }
  // `data` holds native values of mem_type; file_type is how they are stored.
  void add(const std::string& name, hid_t mem_type, hid_t file_type, const std::vector<hsize_t>& dims, const void* data,
           bool chunked = false) {
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked) {
      std::vector<hsize_t> chunk(dims);
      chunk[0] = 1;  // one image per chunk, compressed: the hyperslab must pick chunks
      H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
      H5Pset_deflate(dcpl, 6);
    }
    hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    hid_t d = H5Dcreate2(file_, name.c_str(), file_type, space, lcpl, dcpl, H5P_DEFAULT);
    EXPECT_GE(d, 0) << name;
    EXPECT_GE(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0) << name;
    H5Dclose(d);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
  }

 private:
  hid_t file_;
};

template <class T>
std::vector<T> typed(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

TEST(Hdf5, CxiDefaultPath3D) {
  TempDir dir;
  const auto v = values(kU16, 5 * 4 * 3, 1);
  const auto native = typed<uint16_t>(v);
  {
    H5Writer w(dir / "shots.cxi");
    w.add("/entry_1/data_1/data", H5T_NATIVE_UINT16, H5T_STD_U16LE, {5, 4, 3}, native.data());
  }
  Dataset ds = load_dataset(dir / "shots.cxi");
  EXPECT_EQ(ds.rows(), 5);
  EXPECT_EQ(ds.cols(), 12);
  EXPECT_EQ(ds.item_shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(ds.source_dtype, "uint16");
  EXPECT_EQ(ds.format, "hdf5");
  expect_values(ds, v);
}

// What the explorer checks in a child before libhdf5 reads a file
// (ui/file_check.h): HDF5 names, HDF5 contents under a name that says
// nothing, and never other formats, folders, missing or empty files.
TEST(Hdf5, ReadByLibhdf5FollowsTheReadersChoice) {
  TempDir dir;
  const std::vector<unsigned char> one = {1, 2, 3, 4};
  {
    H5Writer w(dir / "shots.cxi");
    w.add("/entry_1/data_1/data", H5T_NATIVE_UINT8, H5T_STD_U8LE, {2, 2}, one.data());
  }
  EXPECT_TRUE(read_by_libhdf5(dir / "shots.cxi"));
  std::filesystem::copy_file(dir / "shots.cxi", dir / "shots");
  EXPECT_TRUE(read_by_libhdf5(dir / "shots")) << "HDF5 by its signature";
  EXPECT_EQ(load_dataset(dir / "shots").format, "hdf5");
  std::filesystem::copy_file(dir / "shots.cxi", dir / "shots.npy");
  EXPECT_FALSE(read_by_libhdf5(dir / "shots.npy")) << "the name decides first, as for load_dataset";
  write_file(dir / "notes.h5", {'h', 'i'});
  EXPECT_TRUE(read_by_libhdf5(dir / "notes.h5")) << "an HDF5 name goes to libhdf5 whatever it holds";
  write_npy(dir / "noext", "|u1", {2, 2}, one);
  EXPECT_FALSE(read_by_libhdf5(dir / "noext"));
  write_file(dir / "empty", {});
  EXPECT_FALSE(read_by_libhdf5(dir / "empty"));
  EXPECT_FALSE(read_by_libhdf5(dir / "missing.h5"));
  EXPECT_FALSE(read_by_libhdf5(dir.path));
}

TEST(Hdf5, TypesPathsAndHyperslab) {
  TempDir dir;
  const std::string path = dir / "mixed.h5";
  const auto f64 = values(kF64, 6 * 7, 2), i16 = values(kI16, 4 * 2 * 5, 3), u8 = values(kU8, 3 * 4, 4),
             i32 = values(kI32, 8 * 3, 5), f32 = values(kF32, 9 * 2 * 3, 6), i64 = values(kI64, 2 * 3, 7);
  const auto nf64 = typed<double>(f64);
  const auto ni16 = typed<int16_t>(i16);
  const auto nu8 = typed<uint8_t>(u8);
  const auto ni32 = typed<int32_t>(i32);
  const auto nf32 = typed<float>(f32);
  const auto ni64 = typed<int64_t>(i64);
  {
    H5Writer w(path);
    w.add("/a/f64", H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, {6, 7}, nf64.data());
    w.add("/a/b/i16_big_endian", H5T_NATIVE_INT16, H5T_STD_I16BE, {4, 2, 5}, ni16.data());
    w.add("/u8", H5T_NATIVE_UINT8, H5T_STD_U8LE, {3, 4}, nu8.data());
    w.add("/i32", H5T_NATIVE_INT32, H5T_STD_I32LE, {8, 3}, ni32.data());
    w.add("/compressed", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {9, 2, 3}, nf32.data(), true);
    w.add("/i64", H5T_NATIVE_INT64, H5T_STD_I64LE, {2, 3}, ni64.data());
  }
  struct Want {
    const char* name;
    const char* dtype;
    const std::vector<double>* v;
    std::vector<int64_t> item;
  } wants[] = {
      {"/a/f64", "float64", &f64, {7}}, {"a/b/i16_big_endian", "int16", &i16, {2, 5}}, {"/u8", "uint8", &u8, {4}},
      {"/i32", "int32", &i32, {3}},     {"/compressed", "float32", &f32, {2, 3}},      {"/i64", "int64", &i64, {3}}};
  for (const auto& want : wants) {
    SCOPED_TRACE(want.name);
    ReadOptions o;
    o.hdf5_dataset = want.name;
    Dataset ds = load_dataset(path, o);
    EXPECT_EQ(ds.source_dtype, want.dtype);
    EXPECT_EQ(ds.item_shape, want.item);
    expect_values(ds, *want.v);
    o.max_rows = 2;
    Dataset two = load_dataset(path, o);
    int64_t d = 1;
    for (auto x : want.item) d *= x;
    EXPECT_EQ(two.rows(), 2);
    expect_values(two, std::vector<double>(want.v->begin(), want.v->begin() + 2 * d));
  }
}

TEST(Hdf5, BadInputs) {
  TempDir dir;
  const std::string path = dir / "x.h5";
  const auto v = typed<float>(values(kF32, 4 * 6, 1));
  std::vector<float> nan = v;
  nan[13] = std::nanf("");
  const std::vector<std::array<char, 8>> text(4, std::array<char, 8>{'a', 'b', 'c', 0, 0, 0, 0, 0});
  {
    H5Writer w(path);
    w.add("/images/stack", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {4, 6}, v.data());
    w.add("/images/flat", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {24}, v.data());
    w.add("/images/nan", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {4, 6}, nan.data());
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 8);
    w.add("/names", str, str, {4, 1}, text.data());
    H5Tclose(str);
  }
  expect_error(path,
               "no dataset '/entry_1/data_1/data'; 2-D/3-D datasets in the file: /images/nan (4x6), /images/stack "
               "(4x6) (choose one with --dataset)");
  ReadOptions o;
  o.hdf5_dataset = "/images/missing/deeper";
  expect_error(path, "no dataset '/images/missing/deeper'", o);
  o.hdf5_dataset = "/images";
  expect_error(path, "'/images' is a group, not a dataset", o);
  o.hdf5_dataset = "/images/flat";
  expect_error(path, "dataset '/images/flat' has shape 24; expected N x d or N x h x w", o);
  o.hdf5_dataset = "/names";
  expect_error(path, "dataset '/names' holds string values", o);
  o.hdf5_dataset = "/images/nan";
  expect_error(path, "row 2 holds a non-finite value (NaN at column 1)", o);

  auto bytes = read_file(path);
  write_file(dir / "cut.h5",
             std::vector<unsigned char>(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 2)));
  o.hdf5_dataset = "/images/stack";
  expect_error(dir / "cut.h5", "cannot open as HDF5", o);
  write_file(dir / "garbage.cxi", std::vector<unsigned char>(3000, 0x33));
  expect_error(dir / "garbage.cxi", "cannot open as HDF5");
}

// The "no dataset" message lists the 2-D/3-D datasets of the whole file by
// their full paths: group by group, each group's links in name order.
TEST(Hdf5, SuggestionsNameNestedDatasetsInNameOrder) {
  TempDir dir;
  const std::string path = dir / "nested.h5";
  const std::vector<float> v(60, 1.0f);
  {
    H5Writer w(path);
    w.add("/b/w", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 2}, v.data());
    w.add("/a/b/x", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {3, 4, 5}, v.data());
    w.add("/a/b/c/z", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 3}, v.data());
    w.add("/a/b/c/y", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 3}, v.data());
    w.add("/a/flat", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {6}, v.data());  // 1-D: not a candidate
  }
  expect_error(path,
               "no dataset '/entry_1/data_1/data'; 2-D/3-D datasets in the file: /a/b/c/y (2x3), /a/b/c/z (2x3), "
               "/a/b/x (3x4x5), /b/w (2x2) (choose one with --dataset)");
  // Past six, the rest are counted.
  {
    H5Writer w(path);
    for (int i = 0; i < 8; ++i) w.add("/g/d" + std::to_string(i), H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 3}, v.data());
  }
  expect_error(path,
               ": /g/d0 (2x3), /g/d1 (2x3), /g/d2 (2x3), /g/d3 (2x3), /g/d4 (2x3), /g/d5 (2x3) and 2 more "
               "(choose one with --dataset)");
}

// Hard links can make a group its own descendant: each group is listed once.
TEST(Hdf5, SuggestionsListAHardLinkCycleOnce) {
  TempDir dir;
  const std::string path = dir / "cycle.h5";
  const std::vector<float> v(6, 1.0f);
  {
    H5Writer w(path);
    w.add("/loop/inner/data", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 3}, v.data());
    ASSERT_GE(H5Lcreate_hard(w.file(), "/loop", w.file(), "/loop/inner/back", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_hard(w.file(), "/", w.file(), "/loop/inner/root", H5P_DEFAULT, H5P_DEFAULT), 0);
  }
  expect_error(path, "; 2-D/3-D datasets in the file: /loop/inner/data (2x3) (choose one with --dataset)");
}

// Groups nested deeper than the walk goes are left out, and the message says so.
TEST(Hdf5, SuggestionsStopAtTheirDepthLimit) {
  TempDir dir;
  const std::string path = dir / "deep.h5";
  const std::vector<float> v(6, 1.0f);
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "/g";
  {
    H5Writer w(path);
    w.add("/top", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 3}, v.data());
    w.add(deep + "/data", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 3}, v.data());
  }
  expect_error(path,
               "; 2-D/3-D datasets in the file: /top (2x3) (the listing stopped at its limit) (choose one with "
               "--dataset)");
}

// Soft and external links are not followed: a dangling one is no error, and
// what one names elsewhere (in this file or another) is not listed through it.
TEST(Hdf5, SuggestionsFollowNeitherSoftNorExternalLinks) {
  TempDir dir;
  const std::vector<float> v(6, 1.0f);
  {
    H5Writer other(dir / "other.h5");
    other.add("/secret", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 3}, v.data());
  }
  const std::string path = dir / "links.h5";
  {
    H5Writer w(path);
    w.add("/real/data", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {2, 3}, v.data());
    const hid_t f = w.file();
    ASSERT_GE(H5Lcreate_soft("/nowhere", f, "/dangling", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_soft("/real", f, "/alias", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_external("missing.h5", "/data", f, "/missing", H5P_DEFAULT, H5P_DEFAULT), 0);
    ASSERT_GE(H5Lcreate_external("other.h5", "/", f, "/elsewhere", H5P_DEFAULT, H5P_DEFAULT), 0);
  }
  expect_error(path,
               "no dataset '/entry_1/data_1/data'; 2-D/3-D datasets in the file: /real/data (2x3) (choose "
               "one with --dataset)");
}

}  // namespace
