// Hostile input for the dataset readers: tiny files whose headers announce
// huge arrays must fail with one line naming the file before anything that
// size is allocated, and a real shortage of memory must name the file and the
// size asked for. The address space is limited while each case runs, so a
// reader that trusted its header would fail with std::bad_alloc here instead
// of taking the machine's memory.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#if __has_include(<hdf5.h>)
#include <hdf5.h>
#else
#include <hdf5/serial/hdf5.h>
#endif

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "manifold/dataset.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "test_support.h"

using namespace manifold;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Limits the address space to what the process maps now plus `extra` bytes
// while alive (AddressSanitizer maps terabytes of shadow: not under it).
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(uint64_t extra) {
    if (kAddressSanitizer) return;
    getrlimit(RLIMIT_AS, &old_);
    std::ifstream status("/proc/self/status");
    std::string line;
    uint64_t kib = 0;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) kib = std::stoull(line.substr(7));
    rlimit r = old_;
    r.rlim_cur = kib * 1024 + extra;
    active_ = kib > 0 && setrlimit(RLIMIT_AS, &r) == 0;
  }
  ~AddressSpaceLimit() {
    if (active_) setrlimit(RLIMIT_AS, &old_);
  }

 private:
  rlimit old_{};
  bool active_ = false;
};

constexpr uint64_t kGiB = uint64_t{1} << 30;

void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void put_be32(std::vector<unsigned char>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<unsigned char>(x >> s));
}

// Runs load_dataset under a 1 GiB address-space allowance and expects one
// line that starts with `path` and holds `what`.
void expect_refused(const std::string& path, const std::string& what, ReadOptions opt = {}, std::string file = {}) {
  if (file.empty()) file = path;
  std::string message;
  try {
    AddressSpaceLimit limit(kGiB);
    Dataset ds = load_dataset(path, opt);
    ADD_FAILURE() << path << ": loaded " << ds.rows() << " x " << ds.cols() << " instead of failing with '" << what
                  << "'";
    return;
  } catch (const Error& e) {
    message = e.what();
  } catch (const std::bad_alloc&) {
    ADD_FAILURE() << path << ": std::bad_alloc (the reader allocated what the header announced)";
    return;
  }
  EXPECT_EQ(message.rfind(file + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(what), std::string::npos) << "lacks '" << what << "': " << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// ---- IDX ------------------------------------------------------------------

std::vector<unsigned char> idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::vector<unsigned char> v = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims) put_be32(v, d);
  return v;
}

TEST(HostileIdx, TinyFileAnnouncingGigabytes) {
  TempDir t;
  // 70000 x 256 x 256 bytes = 4.6 GB announced, 160 bytes given.
  auto bytes = idx_header(0x08, {70000, 256, 256});
  bytes.resize(176, 7);
  write_file(t / "big-images-idx3-ubyte", bytes);
  expect_refused(t / "big-images-idx3-ubyte", "need 4587520000 bytes");
}

TEST(HostileIdx, TinyGzipAnnouncingGigabytes) {
  TempDir t;
  auto bytes = idx_header(0x0D, {70000, 256, 256});
  bytes.resize(400, 0);
  const std::string path = t / "big-images-idx3-ubyte.gz";
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  expect_refused(path, "of compressed data expand to at most");
}

// Found by fuzz_idx: no items, but items of 3166485692 x 3154116608 values
// (their product overflowed int64 while the empty array passed the checks).
TEST(HostileIdx, NoItemsOfAnImpossibleSize) {
  TempDir t;
  write_file(t / "zero-images-idx3-ubyte", idx_header(0x08, {0, 3166485692u, 3154116608u}));
  expect_refused(t / "zero-images-idx3-ubyte", "impossibly large");
}

// The same for .npy: an empty array whose items would hold 2^62 x 4 values.
TEST(HostileNpy, NoRowsOfAnImpossibleSize) {
  TempDir t;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  // The file in one string, then one vector: GCC 12 reports a false
  // -Warray-bounds for a vector grown by insert() from a string's iterators.
  const std::string file = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xff) +
                           static_cast<char>(header.size() >> 8) + header;
  const std::vector<unsigned char> bytes(file.begin(), file.end());
  write_file(t / "empty.npy", bytes);
  expect_refused(t / "empty.npy", "impossibly large");
}

// ---- PNG ------------------------------------------------------------------

void put_chunk(std::vector<unsigned char>& png, const char* type, const std::vector<unsigned char>& data) {
  put_be32(png, static_cast<uint32_t>(data.size()));
  std::vector<unsigned char> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  png.insert(png.end(), body.begin(), body.end());
  put_be32(png, static_cast<uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
}

// A valid PNG header announcing w x h 8-bit gray pixels, with a few bytes of
// (deflated zero) image data.
std::vector<unsigned char> png_announcing(uint32_t w, uint32_t h) {
  std::vector<unsigned char> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<unsigned char> ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr.insert(ihdr.end(), {8, 0, 0, 0, 0});
  put_chunk(png, "IHDR", ihdr);
  std::vector<unsigned char> zeros(64, 0), packed(128);
  uLongf n = packed.size();
  compress(packed.data(), &n, zeros.data(), zeros.size());
  packed.resize(n);
  put_chunk(png, "IDAT", packed);
  put_chunk(png, "IEND", {});
  return png;
}

TEST(HostilePng, TinyFileAnnouncing50000Squared) {
  TempDir t;
  write_file(t / "huge.png", png_announcing(50000, 50000));
  expect_refused(t / "huge.png", "50000x50000 pixels need");
  // The same check in a folder of images.
  fs::create_directory(t / "folder");
  write_file(t / "folder/a.png", png_announcing(50000, 50000));
  expect_refused(t / "folder", "50000x50000 pixels need", {}, t / "folder/a.png");
}

// ---- TIFF -----------------------------------------------------------------

// A little-endian TIFF of one strip: w x h 16-bit gray samples said to lie
// at `offset` with `count` bytes; `data_bytes` bytes of data follow the IFD.
std::vector<unsigned char> tiff_announcing(uint32_t w, uint32_t h, uint32_t offset, uint32_t count, size_t data_bytes) {
  std::vector<unsigned char> v = {'I', 'I', 42, 0, 8, 0, 0, 0};
  auto u16 = [&v](uint16_t x) {
    v.push_back(static_cast<unsigned char>(x)), v.push_back(static_cast<unsigned char>(x >> 8));
  };
  auto u32 = [&](uint32_t x) { u16(static_cast<uint16_t>(x)), u16(static_cast<uint16_t>(x >> 16)); };
  struct Entry {
    uint16_t tag, type;
    uint32_t value;
  };
  const std::vector<Entry> entries = {{256, 4, w},      {257, 4, h}, {258, 3, 16}, {259, 3, 1},     {262, 3, 1},
                                      {273, 4, offset}, {277, 3, 1}, {278, 4, h},  {279, 4, count}, {339, 3, 1}};
  u16(static_cast<uint16_t>(entries.size()));
  for (const Entry& e : entries) {
    u16(e.tag);
    u16(e.type);
    u32(1);
    if (e.type == 3) u16(static_cast<uint16_t>(e.value)), u16(0);
    else
      u32(e.value);
  }
  u32(0);  // no next page
  v.resize(v.size() + data_bytes, 0x5a);
  return v;
}

TEST(HostileTiff, TinyFileAnnouncing65535Squared) {
  TempDir t;
  const auto bytes = tiff_announcing(65535, 65535, 134, 16, 16);
  ASSERT_LE(bytes.size(), 160u);
  write_file(t / "huge.tif", bytes);
  expect_refused(t / "huge.tif", "image's pixels need 8589672450 bytes");
}

TEST(HostileTiff, StripOffsetZeroIsRefused) {
  TempDir t;
  // 4 x 2 samples of 2 bytes "at byte 0": the header's own bytes.
  write_file(t / "zero.tif", tiff_announcing(4, 2, 0, 16, 16));
  expect_refused(t / "zero.tif", "strip 0 starts at byte 0, inside the TIFF header (corrupt StripOffsets)");
  // The same image with its strip where it belongs reads.
  write_file(t / "fine.tif", tiff_announcing(4, 2, 134, 16, 16));
  Dataset ds = load_dataset(t / "fine.tif");
  EXPECT_EQ(ds.rows(), 1);
  EXPECT_EQ(ds.cols(), 8);
  EXPECT_EQ(ds.data()[0], 0x5a5a);
}

// ---- HDF5 -----------------------------------------------------------------

// A dataset of the given shape created and never written: HDF5 would return
// fill values for all of it.
void write_unwritten_h5(const std::string& path, const std::vector<hsize_t>& dims, bool chunked) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunked) {
    std::vector<hsize_t> chunk(dims);
    chunk[0] = 1024;
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
  }
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t d = H5Dcreate2(file, "/data", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  H5Dclose(d);
  H5Sclose(space);
  H5Pclose(dcpl);
  H5Fclose(file);
}

TEST(HostileHdf5, UnwrittenStorageIsRefusedNotReadAsZeros) {
  TempDir t;
  ReadOptions o;
  o.hdf5_dataset = "/data";
  write_unwritten_h5(t / "chunked.h5", {hsize_t{1} << 31, 1}, true);
  EXPECT_LT(fs::file_size(t / "chunked.h5"), 10000u);
  expect_refused(t / "chunked.h5", "never written", o);
  write_unwritten_h5(t / "contiguous.h5", {hsize_t{1} << 31, 1}, false);
  expect_refused(t / "contiguous.h5", "has no data written", o);
}

TEST(HostileHdf5, ExternalLinksAreRefused) {
  TempDir t;
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  {
    hid_t file = H5Fcreate((t / "other.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {3, 2};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t d = H5Dcreate2(file, "/data", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(file);
  }
  {
    hid_t file = H5Fcreate((t / "link.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Lcreate_external("other.h5", "/data", file, "/data", H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(file, "/group", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    H5Lcreate_external("other.h5", "/", file, "/group/elsewhere", H5P_DEFAULT, H5P_DEFAULT);
    H5Lcreate_soft("/data", file, "/soft", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(file);
  }
  ReadOptions o;
  o.hdf5_dataset = "/data";
  expect_refused(t / "link.h5", "'/data' is an external link to another file; refused", o);
  o.hdf5_dataset = "/group/elsewhere/data";
  expect_refused(t / "link.h5", "'/group/elsewhere' is an external link to another file; refused", o);
  o.hdf5_dataset = "/soft";
  expect_refused(t / "link.h5", "external link to another file; refused", o);
  // The file linked to reads on its own.
  o.hdf5_dataset = "/data";
  Dataset ds = load_dataset(t / "other.h5", o);
  EXPECT_EQ(ds.rows(), 3);
}

// ---- names and metadata ---------------------------------------------------------

TEST(HostileNames, NewlinesAndTerminalEscapesArePrintedEscaped) {
  TempDir t;
  const std::string name = "two\nlines\x1b]0;title\x07.npy";
  write_file(t / name, {'n', 'o', 't', ' ', 'n', 'u', 'm', 'p', 'y'});
  try {
    load_dataset(t / name);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
    EXPECT_EQ(m.find('\x07'), std::string::npos) << m;
    EXPECT_NE(m.find("two\\nlines\\x1b]0;title\\x07.npy\": "), std::string::npos) << m;
  }
}

TEST(HostileGraph, UnknownMetricNamesTheGraphFileNotAnOption) {
  TempDir t;
  KnnGraph g;
  g.n = 3, g.k = 1, g.d = 2;
  g.indices = {1, 0, 1};
  g.distances = {1, 1, 2};
  write_graph(t / "g", g);
  std::string json;
  {
    std::ifstream in(t / "g/graph.json");
    json.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = json.find("\"euclidean\"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 11, "\"manhattan\"");
  std::ofstream(t / "g/graph.json") << json;
  try {
    read_graph(t / "g");
    ADD_FAILURE() << "read";
  } catch (const UsageError& e) {
    ADD_FAILURE() << "a bad argument, but the user gave none: " << e.what();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(t / "g/graph.json: unknown metric 'manhattan'", 0), 0u) << m;
    EXPECT_EQ(m.find("--metric"), std::string::npos) << m;
  }
}

// ---- running out of memory --------------------------------------------------

// A sparse MRC file whose header is true (4 GiB of int16 samples are there,
// as holes): reading needs 8 GiB of floats, more than the limit allows.
TEST(HostileMemory, OutOfMemoryNamesTheFileAndTheSize) {
  if (kAddressSanitizer) GTEST_SKIP() << "the address-space limit is not usable under AddressSanitizer";
  TempDir t;
  const std::string path = t / "sparse.mrcs";
  std::vector<unsigned char> h(1024, 0);
  auto put = [&h](size_t at, int32_t x) { std::memcpy(h.data() + at, &x, 4); };
  put(0, 1024), put(4, 1024), put(8, 2048), put(12, 1);  // nx ny nz, mode 1 (int16)
  std::memcpy(h.data() + 208, "MAP ", 4);
  h[212] = h[213] = 0x44;
  write_file(path, h);
  fs::resize_file(path, 1024 + uint64_t{1024} * 1024 * 2048 * 2);
  expect_refused(path, "out of memory: cannot allocate 8589934592 bytes (8.0 GiB) for 2048 x 1048576 float32 values");
}

}  // namespace
