#pragma once
// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace manifold::npy {

struct Header {
  std::string descr;  ///< e.g. "<f4", "|u1", "<i8"
  bool fortran_order = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  ///< byte offset of the data in the file
  size_t item_size() const;
  int64_t count() const;  ///< product of shape
};

/// Parses the header of `path`; throws Error naming the file.
Header read_header(const std::string& path);

/// Reads exactly `n` bytes into `dst`; false where the source ends first.
using ReadBytes = std::function<bool(char* dst, size_t n)>;
/// Parses a .npy header from its first bytes on (an array inside an .npz
/// archive): `size`, the array file's whole size in bytes, must hold the
/// data the header announces. Errors name `source`.
Header parse_header(const ReadBytes& read, uint64_t size, const std::string& source);

/// Reads a whole array converted to T (float, double, int64_t, int32_t).
/// Alloc: std::allocator, or DefaultInitAllocator (manifold/result_vector.h)
/// for float and int64_t, to read straight into a graph's result vectors.
template <class T, class Alloc = std::allocator<T>>
std::vector<T, Alloc> read(const std::string& path, std::vector<int64_t>* shape = nullptr);

/// Writes `count(shape)` values. The file appears atomically (temp + rename).
void write(const std::string& path, const float* data, const std::vector<int64_t>& shape);
void write(const std::string& path, const double* data, const std::vector<int64_t>& shape);
void write(const std::string& path, const int64_t* data, const std::vector<int64_t>& shape);
void write(const std::string& path, const int32_t* data, const std::vector<int64_t>& shape);
void write(const std::string& path, const uint8_t* data, const std::vector<int64_t>& shape);
void write(const std::string& path, const uint16_t* data, const std::vector<int64_t>& shape);
void write(const std::string& path, const int16_t* data, const std::vector<int64_t>& shape);

}  // namespace manifold::npy
