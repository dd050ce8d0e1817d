// NumPy .npz (np.savez, np.savez_compressed): a zip archive of .npy arrays,
// read through zlib's minizip. One array is the stack: the one named by
// ReadOptions::hdf5_dataset (--dataset NAME), else the largest; an integer
// array "labels" (or "label", "y") of one value per image gives the labels.
// An array stored uncompressed (np.savez) as little-endian float32 in C
// order is memory-mapped like a .npy file; any other is read and converted.
#include <unzip.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "manifold/npy.h"
#include "readers.h"

namespace manifold::io {

namespace {

struct Member {
  std::string name;     ///< as stored: "images.npy"
  uint64_t stored = 0;  ///< bytes in the archive
  uint64_t size = 0;    ///< bytes of the .npy file it holds
  bool deflated = false;
};

/// "images.npy" -> "images": the name np.load gives the array.
std::string array_name(const std::string& member) {
  return member.size() > 4 && member.compare(member.size() - 4, 4, ".npy") == 0 ? member.substr(0, member.size() - 4)
                                                                                : member;
}

/// The archive, open for reading one member at a time.
class Archive {
 public:
  explicit Archive(const std::string& path) : path_(path), zip_(unzOpen64(path.c_str())) {
    if (!zip_) fail(path, "not a readable zip archive (an .npz is one: np.savez, np.savez_compressed)");
    for (int rc = unzGoToFirstFile(zip()); rc == UNZ_OK; rc = unzGoToNextFile(zip())) {
      unz_file_info64 info;
      // minizip ends the name with a NUL only where it fits: one place kept for it.
      char name[1024] = {};
      if (unzGetCurrentFileInfo64(zip(), &info, name, sizeof name - 1, nullptr, 0, nullptr, 0) != UNZ_OK)
        fail(path, "unreadable zip directory");
      if (info.compression_method != 0 && info.compression_method != Z_DEFLATED)
        fail(path, std::string("array '") + array_name(name) + "' is compressed other than by deflate");
      members_.push_back({name, info.compressed_size, info.uncompressed_size, info.compression_method != 0});
    }
    if (members_.empty()) fail(path, "holds no arrays");
  }

  const std::vector<Member>& members() const { return members_; }

  /// Opens `m` for read(); returns the offset of its first byte in the
  /// archive file (meaningful where it is stored uncompressed).
  uint64_t open(const Member& m) {
    close();
    where_ = path_ + ":" + array_name(m.name);
    if (unzLocateFile(zip(), m.name.c_str(), 1) != UNZ_OK || unzOpenCurrentFile(zip()) != UNZ_OK)
      fail(where_, "cannot open the array");
    open_ = true;
    return unzGetCurrentFileZStreamPos64(zip());
  }
  /// Exactly n bytes of the open member; false where it ends first.
  bool read(char* dst, size_t n) {
    while (n > 0) {
      const unsigned part = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
      const int got = unzReadCurrentFile(zip(), dst, part);
      if (got < 0) fail(where_, "corrupt compressed data (zip error " + std::to_string(got) + ")");
      if (got == 0) return false;
      dst += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }
  void close() {
    if (open_ && unzCloseCurrentFile(zip()) == UNZ_CRCERROR) fail(where_, "corrupt array data (CRC mismatch)");
    open_ = false;
  }

 private:
  /// Closes the archive (and its open member) however the reader leaves,
  /// a throw from the constructor included.
  struct Close {
    void operator()(void* z) const { unzClose(z); }
  };
  unzFile zip() const { return zip_.get(); }

  std::string path_, where_;  // where_: "PATH:ARRAY" of the open member, for its errors
  std::unique_ptr<void, Close> zip_;
  std::vector<Member> members_;
  bool open_ = false;
};

/// The member the stack is read from: the one asked for, else the largest.
const Member& stack_member(const Archive& zip, const std::string& path, const std::string& wanted) {
  const auto& ms = zip.members();
  if (!wanted.empty()) {
    for (const Member& m : ms)
      if (m.name == wanted || array_name(m.name) == wanted) return m;
    std::string names;
    for (const Member& m : ms) names += (names.empty() ? "" : ", ") + array_name(m.name);
    fail(path, "no array '" + wanted + "' (it holds " + names + ")");
  }
  return *std::max_element(ms.begin(), ms.end(), [](const Member& a, const Member& b) { return a.size < b.size; });
}

/// The open member's .npy header, checked against the member's size (and
/// that size against its stored bytes: equal, or within what deflate can
/// expand them to), before anything is allocated.
npy::Header member_header(Archive& zip, const Member& m, const std::string& where) {
  if (m.deflated) check_announced(where, "the array", m.size, m.stored, kDeflateMaxRatio);
  else if (m.size != m.stored)
    fail(where, "corrupt zip directory (an uncompressed array of " + std::to_string(m.stored) + " bytes said to hold " +
                    std::to_string(m.size) + ")");
  return npy::parse_header([&](char* dst, size_t n) { return zip.read(dst, n); }, m.size, where);
}

/// `count` values of the open member, whose header `h` was just read,
/// converted to float in C order.
void read_member_values(Archive& zip, const npy::Header& h, Sample s, bool swap, size_t count, const std::string& where,
                        float* dst) {
  const size_t item = sample_size(s);
  npy_values_in_c_order(
      h.shape, h.fortran_order, count, where,
      [&](size_t n, float* out) {
    std::vector<unsigned char> buf(std::min<size_t>(n, (size_t{4} << 20) / item) * item);
    for (size_t done = 0; done < n;) {
      const size_t part = std::min(n - done, buf.size() / item);
      if (!zip.read(reinterpret_cast<char*>(buf.data()), part * item)) fail(where, "corrupt or truncated array data");
      convert_samples(buf.data(), s, swap, part, out + done);
      done += part;
    }
      },
      dst);
}

/// The first n labels of the stack's `rows` images, from the integer array
/// of one value per image beside it (named labels, label or y), if any.
std::vector<int32_t> read_labels(Archive& zip, const Member& stack, int64_t rows, int64_t n, const std::string& path) {
  for (const Member& m : zip.members()) {
    const std::string name = array_name(m.name);
    if (&m == &stack || (name != "labels" && name != "label" && name != "y")) continue;
    zip.open(m);
    const std::string where = path + ":" + name;
    const npy::Header h = member_header(zip, m, where);
    Sample s{};
    bool swap = false;
    const bool integers = npy_sample(h.descr, true, &s, &swap) && !sample_is_float(s);
    const bool one_each = h.shape.size() == 1 || (h.shape.size() == 2 && h.shape[1] == 1);
    if (!integers || !one_each || h.shape[0] != rows) continue;
    std::vector<float> v(static_cast<size_t>(n));
    read_member_values(zip, h, s, swap, v.size(), where, v.data());
    // Class numbers, exact in float: larger values are not labels.
    constexpr float kLargestLabel = 1 << 24;
    if (std::any_of(v.begin(), v.end(), [](float x) { return !(std::fabs(x) <= kLargestLabel); })) return {};
    return std::vector<int32_t>(v.begin(), v.end());
  }
  return {};
}

}  // namespace

Dataset read_npz(const std::string& path, const ReadOptions& opt) {
  Archive zip(path);
  const Member& m = stack_member(zip, path, opt.hdf5_dataset);
  const std::string name = array_name(m.name), where = path + ":" + name;
  const uint64_t start = zip.open(m);
  const npy::Header h = member_header(zip, m, where);
  Sample s{};
  bool swap = false;
  if (!npy_sample(h.descr, false, &s, &swap)) fail(where, unsupported_npy_dtype(h.descr));
  if (h.shape.size() != 2 && h.shape.size() != 3)
    fail(where, "array of " + std::to_string(h.shape.size()) + " axes; expected N x d or N x h x w");
  const std::vector<int64_t> item(h.shape.begin() + 1, h.shape.end());
  int64_t d = 1;
  for (int64_t x : item) d *= x;
  if (d == 0) fail(where, "its items hold no values");
  int64_t n = h.shape[0];
  if (opt.max_rows >= 0) n = std::min(n, opt.max_rows);

  Dataset ds;
  const uint64_t data_at = start + h.data_offset;
  if (!m.deflated && s == Sample::f32 && !swap && !h.fortran_order && data_at % alignof(float) == 0 && n > 0) {
    ds = mapped_float32(path, data_at, n, d, where);
  } else {
    std::vector<float> v;
    allocate(where, v, static_cast<size_t>(n * d), std::to_string(n) + " x " + std::to_string(d) + " float32 values");
    read_member_values(zip, h, s, swap, v.size(), where, v.data());
    if (n == h.shape[0]) zip.close();  // read whole: its CRC is checked
    ds = Dataset(n, d, std::move(v));
  }
  ds.labels = read_labels(zip, m, h.shape[0], n, path);
  ds.item_shape = item;
  ds.source_dtype = npy_type_text(s, swap, h.fortran_order);
  ds.format = "npz";
  ds.array = name;
  return ds;
}

}  // namespace manifold::io
