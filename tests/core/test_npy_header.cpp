// .npy headers as an attacker or an old NumPy writes them: the hand-written
// parser accepts what NumPy accepts for the dtypes read here and refuses the
// rest with one line, without recursion, huge allocations or overflow; and
// the typed reader's Fortran-order and big-endian arrays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/result_vector.h"
#include "test_support.h"

using namespace manifold;
using testing_support::TempDir;

namespace {

/// A version-`major` .npy file with header `dict` and `data_bytes` bytes of
/// data (a float32 pattern), no padding rules enforced.
std::string write_raw(const TempDir& t, const std::string& name, const std::string& dict, size_t data_bytes,
                      int major = 1, int64_t announced = -1) {
  const std::string path = t / name;
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY", 6);
  f.put(static_cast<char>(major));
  f.put(0);
  const uint64_t len = announced >= 0 ? static_cast<uint64_t>(announced) : dict.size();
  const int bytes = major == 1 ? 2 : 4;
  for (int b = 0; b < bytes; ++b) f.put(static_cast<char>((len >> (8 * b)) & 0xff));
  f << dict;
  for (size_t i = 0; i < data_bytes; ++i) f.put(static_cast<char>(0x3f));
  return path;
}

std::string error_of(const std::string& path) {
  try {
    npy::read<float>(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NpyHeader, WhatNumpyWritesIsRead) {
  TempDir t;
  std::vector<int64_t> shape;
  // Double quotes, no trailing comma, Python 2's long suffix, a version 2 header.
  auto v = npy::read<float>(write_raw(t, "a.npy",
                                      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2L, 3L)}\n", 24),
                            &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(v.size(), 6u);
  v = npy::read<float>(write_raw(t, "b.npy", "{'shape': (4,), 'descr': '<f4', 'fortran_order': False, }", 16, 2),
                       &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{4}));
  // A scalar's empty shape, and a repeated key keeps its last value as in Python.
  npy::read<float>(write_raw(t, "c.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4), &shape);
  EXPECT_TRUE(shape.empty());
  npy::read<float>(write_raw(t, "d.npy", "{'descr': '<f4', 'shape': (9,), 'fortran_order': False, 'shape': (2,)}", 8),
                   &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2}));
  // Fortran order (np.save of a transposed array) and big-endian: the
  // C-order, native values. Element (i, j, l) of a 2 x 3 x 2 array is
  // 100 i + 10 j + l; Fortran order stores it at i + 2 (j + 3 l).
  std::string fortran_data(12 * 4, '\0'), big_data(12 * 8, '\0');
  std::vector<float> c_order;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 2; ++l) {
        const float x = static_cast<float>(100 * i + 10 * j + l);
        const double y = x;
        c_order.push_back(x);
        std::memcpy(fortran_data.data() + 4 * (i + 2 * (j + 3 * l)), &x, 4);
        char b[8];
        std::memcpy(b, &y, 8);
        std::reverse(b, b + 8);
        std::memcpy(big_data.data() + 8 * (i + 2 * (j + 3 * l)), b, 8);
      }
  const std::string f = write_raw(t, "f.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 2), }", 0);
  { std::ofstream(f, std::ios::app | std::ios::binary) << fortran_data; }
  EXPECT_EQ(npy::read<float>(f, &shape), c_order);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3, 2}));
  const std::string fb = write_raw(t, "fb.npy", "{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3, 2), }", 0);
  { std::ofstream(fb, std::ios::app | std::ios::binary) << big_data; }
  EXPECT_EQ(npy::read<float>(fb), c_order);                                               // converted from float64
  EXPECT_EQ(npy::read<double>(fb), std::vector<double>(c_order.begin(), c_order.end()));  // read as stored
  // A round trip through the writer.
  const float x[3] = {1.5f, -2.f, 7.f};
  npy::write(t / "e.npy", x, {3});
  EXPECT_EQ(npy::read<float>(t / "e.npy"), (std::vector<float>{1.5f, -2.f, 7.f}));
}

// A graph's result vectors (manifold/result_vector.h) leave new elements
// unset when sized, but every other way of filling them keeps its values:
// reading a file straight into them (graph_io), converting from another
// dtype, and growing with a value.
TEST(NpyHeader, ResultVectorsReadAndGrowWithTheirValues) {
  TempDir t;
  const int64_t idx[4] = {3, -1, int64_t{1} << 40, 0};
  npy::write(t / "i.npy", idx, {2, 2});
  std::vector<int64_t> shape;
  const ResultVector<int64_t> r = npy::read<int64_t, DefaultInitAllocator<int64_t>>(t / "i.npy", &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(std::vector<int64_t>(r.begin(), r.end()), (std::vector<int64_t>(idx, idx + 4)));
  const int32_t small[3] = {7, -8, 9};
  npy::write(t / "s.npy", small, {3});
  const ResultVector<float> f = npy::read<float, DefaultInitAllocator<float>>(t / "s.npy");
  EXPECT_EQ(std::vector<float>(f.begin(), f.end()), (std::vector<float>{7.f, -8.f, 9.f}));
  ResultVector<int64_t> g(3, 5);
  g.resize(5, 6);
  g.push_back(7);
  EXPECT_EQ(std::vector<int64_t>(g.begin(), g.end()), (std::vector<int64_t>{5, 5, 5, 6, 6, 7}));
  g.resize(2);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(g[1], 5);
}

TEST(NpyHeader, LongFieldsFailWithOneLineNotACrash) {
  // 30,000-character fields crashed std::regex (recursion per character).
  TempDir t;
  const std::string long_descr = "{'descr': '<f4" + std::string(30000, 'x') +
                                 "', 'fortran_order': False, 'shape': (1,)}";
  EXPECT_NE(error_of(write_raw(t, "a.npy", long_descr, 4)).find("unsupported dtype"), std::string::npos);
  std::string long_shape = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 10000; ++i) long_shape += "1, ";
  long_shape += ")}";
  std::vector<int64_t> shape;
  npy::read<float>(write_raw(t, "b.npy", long_shape, 4), &shape);  // 10,000 dimensions of 1: one element
  EXPECT_EQ(shape.size(), 10000u);
  std::string deep = "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(30000, '(') + "}";
  EXPECT_NE(error_of(write_raw(t, "c.npy", deep, 4)).find("malformed .npy header"), std::string::npos);
}

TEST(NpyHeader, BadHeadersAreRefused) {
  TempDir t;
  struct Case {
    std::string dict;
    std::string says;
  };
  const Case cases[] = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1e1, 16)}", "expected ',' or ')' in shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2**61)}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 2)}", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "dimension too large"},
      // Found by fuzz_npy: the digit after 2555555555555555555 overflowed
      // int64 before the bound was checked (undefined; caught under UBSan).
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (25555555555555555555, 1)}", "dimension too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904)}", "truncated"},
      {"{'descr': '<f4', 'fortran_order': False}", "no shape"},
      {"{'fortran_order': False, 'shape': (1,)}", "no descr"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4', 'evil': __import__('os'), 'shape': (1,)}", "unexpected key"},
      {"{'descr': '<f4', 'shape': (1,)", "expected ',' or '}'"},
      {"{'descr': '<f4, 'shape': (1,)}", "expected ',' or '}'"},
      {"{'descr': '<f4junk', 'fortran_order': False, 'shape': (1,)}", "unsupported dtype"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", "expected a string"},
  };
  for (const Case& c : cases) {
    const std::string what = error_of(write_raw(t, "x.npy", c.dict, 16));
    EXPECT_NE(what.find(c.says), std::string::npos) << c.dict << " -> " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  // A length field announcing 2 GiB: refused before any allocation.
  const std::string huge = write_raw(t, "h.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, 2,
                                     0x7fffffff);
  EXPECT_NE(error_of(huge).find("more than"), std::string::npos) << error_of(huge);
  // Announcing more than the file holds.
  const std::string cut = write_raw(t, "c.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, 1, 4000);
  EXPECT_NE(error_of(cut).find("truncated"), std::string::npos) << error_of(cut);
}

}  // namespace
