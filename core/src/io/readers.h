#pragma once
// Private to the dataset readers: one reader per format, and the helpers they
// share (errors naming the file, sample conversion, memory maps, stacking
// same-sized images).
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "manifold/dataset.h"

namespace manifold::io {

/// Throws Error("PATH: what"): every reader failure is one line naming the file.
[[noreturn]] void fail(const std::string& path, const std::string& what);

/// Element types found on disk.
enum class Sample { u8, i8, u16, i16, u32, i32, i64, f16, f32, f64 };
size_t sample_size(Sample s);
const char* sample_name(Sample s);
bool sample_is_float(Sample s);

/// Converts `count` packed samples at `src` to float; `swap` reverses the byte
/// order of each sample (big-endian data on this little-endian host).
void convert_samples(const unsigned char* src, Sample s, bool swap, size_t count, float* dst);

/// Reads `count` samples starting at byte `offset` of the file and converts
/// them, in bounded chunks so a large file never needs a second full copy.
void read_samples(const std::string& path, uint64_t offset, Sample s, bool swap, size_t count, float* dst);

/// A .npy descr's sample type and byte order: little-endian, native, byte
/// sized or big-endian (`swap`); bool (b1) as u8 only where `allow_bool`.
/// False for any other type.
bool npy_sample(const std::string& descr, bool allow_bool, Sample* s, bool* swap);

/// "unsupported dtype '<c8' (complex); expected ...": the one line for an
/// array of a type no reader converts.
std::string unsupported_npy_dtype(const std::string& descr);
/// A .npy array's type as the dataset states it: "float32", and where the
/// file had to be converted whole (never memory-mapped), "float32
/// (big-endian, Fortran order)".
std::string npy_type_text(Sample s, bool swap, bool fortran_order);

/// Reads `n` of an array's values, in the order stored, into `dst`.
using ReadStored = std::function<void(size_t n, float* dst)>;
/// The first `count` values of a .npy array (its header's `shape` and
/// `fortran_order`, at most three axes) in C order (row-major), as `read`
/// gives them in the order stored: a Fortran-order array -- what np.save
/// writes for a transposed or F-contiguous array, as scipy.io.loadmat returns
/// them -- read whole and transposed (its values' memory twice). `where`
/// names the array in errors.
void npy_values_in_c_order(const std::vector<int64_t>& shape, bool fortran_order, size_t count,
                           const std::string& where, const ReadStored& read, float* dst);

/// n x d little-endian float32 values at byte `offset` of the file, viewed
/// in place through a memory map (pages loaded on demand); `where` names the
/// data in the error if the file has shrunk below them since its header was read.
Dataset mapped_float32(const std::string& path, uint64_t offset, int64_t n, int64_t d, const std::string& where);

/// Maps the whole file read-only; the returned handle unmaps when released.
/// `size` receives the file size.
std::shared_ptr<const void> map_file(const std::string& path, size_t* size);

/// "4294967296 bytes (4.0 GiB)": a size for messages.
std::string bytes_text(uint64_t bytes);

/// Throws when a header announces more data than the file can hold:
/// `announced` bytes of samples, after up to `max_ratio` expansion of the
/// `stored` bytes the file has for them (1 for raw data; a codec's worst case
/// ratio for compressed data). Called before anything is allocated, so a
/// 100-byte file announcing a 50000 x 50000 image fails at once.
void check_announced(const std::string& path, const std::string& what, uint64_t announced, uint64_t stored,
                     uint64_t max_ratio);

/// The worst-case expansion of deflate (zlib, gzip, PNG, TIFF and HDF5 deflate):
/// 258 bytes from a 2-bit code at best, so at most 1032 times its input.
constexpr uint64_t kDeflateMaxRatio = 1032;

/// Resizes `v` to `count` elements; running out of memory becomes one line
/// naming the file and the size asked for instead of a bare std::bad_alloc.
template <class T>
void allocate(const std::string& path, std::vector<T>& v, size_t count, const std::string& what) {
  try {
    v.resize(count);
  } catch (const std::bad_alloc&) {
    fail(path, "out of memory: cannot allocate " + bytes_text(uint64_t{count} * sizeof(T)) + " for " + what);
  } catch (const std::length_error&) {
    fail(path, "out of memory: cannot allocate " + bytes_text(uint64_t{count} * sizeof(T)) + " for " + what);
  }
}

/// rows * cols with a check against absurd headers (overflow, > 2^62 bytes).
int64_t checked_count(const std::string& path, const std::vector<int64_t>& dims, size_t sample_bytes);

/// Accumulates same-sized single-channel images (pages of a TIFF, files of a
/// folder) into one row-major matrix, refusing one of a different size or type.
struct ImageStack {
  int64_t width = -1, height = -1;
  std::string dtype;  ///< sample type of the first image
  std::string first;  ///< where the first image came from, for messages
  std::vector<float> values;
  int64_t count = 0;
  int64_t max_images = -1;  ///< stop accepting after this many (-1 = no limit)
  int64_t expected = 0;     ///< how many images are likely to come: sizes the first allocation

  bool full() const { return max_images >= 0 && count >= max_images; }
  /// Checks the next image against the first one and returns where its
  /// height * width values go. Messages start with `path`; `where` names the
  /// image there ("image", "page 3"); `label` names it in the messages about
  /// later images ("dir/a.png", "page 1").
  float* add(const std::string& path, const std::string& where, const std::string& label, int64_t w, int64_t h,
             const std::string& type);
  Dataset finish(const std::string& format) &&;
};

/// Appends the image of one PNG file (8/16-bit; gray, gray+alpha, RGB, RGBA or
/// palette, colour converted to Rec. 709 luma of the stored values).
void append_png(const std::string& path, ImageStack& stack);
/// Appends every page of a TIFF file (one channel, 8/16/32-bit integer or 32/64-bit float).
/// `in_folder` words the messages for a file among others ("page 2 of dir/a.tif").
void append_tiff(const std::string& path, ImageStack& stack, bool in_folder);

/// How many images append_tiff takes from the file (its pages but the
/// reduced-resolution ones), counted from the page headers alone.
int64_t tiff_image_count(const std::string& path);

Dataset read_npy(const std::string& path, const ReadOptions& opt);
Dataset read_idx(const std::string& path, const ReadOptions& opt);
Dataset read_image_folder(const std::string& path, const ReadOptions& opt);
/// The item_names read_image_folder gives the folder's rows, found without
/// decoding an image.
std::vector<std::string> image_folder_item_names(const std::string& path);
/// The folder's order of file names: runs of digits compare as numbers
/// (img2 before img10), the rest byte by byte.
bool natural_less(const std::string& a, const std::string& b);
Dataset read_png(const std::string& path, const ReadOptions& opt);
Dataset read_tiff(const std::string& path, const ReadOptions& opt);
Dataset read_mrc(const std::string& path, const ReadOptions& opt);
Dataset read_hdf5(const std::string& path, const ReadOptions& opt);
Dataset read_npz(const std::string& path, const ReadOptions& opt);

/// The CXI pixel mask of an HDF5 file, its bits as stored (see mask.h).
struct CxiMask {
  std::string name;           ///< the dataset it was read from
  std::vector<int64_t> dims;  ///< {h, w} or {N, h, w}
  std::vector<uint32_t> bits;
};
/// Reads /entry_1/data_1/mask, else /entry_1/instrument_1/detector_1/mask;
/// false when the file has neither. Throws naming the file otherwise.
bool read_cxi_mask(const std::string& path, CxiMask* out);

}  // namespace manifold::io
