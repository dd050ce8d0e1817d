// HDF5 / CXI through the libhdf5 C API: one 2-D (N x d) or 3-D (N x h x w)
// dataset of any integer or float type, converted to float32 by HDF5 itself.
// max_rows becomes a hyperslab, so only those rows are read (and decompressed).
#include <hdf5.h>

#include <algorithm>
#include <filesystem>

#include "hdf5_handle.h"
#include "hdf5_walk.h"
#include "readers.h"

namespace manifold::io {

namespace {

const char* kDefaultDataset = "/entry_1/data_1/data";

herr_t keep_innermost(unsigned n, const H5E_error2_t* e, void* out) {
  if (n == 0 && e && e->desc) *static_cast<std::string*>(out) = e->desc;
  return 0;
}

// The most specific message of the last failure ("truncated file: eof = ...",
// "file signature not found"), in parentheses, or "".
std::string last_error() {
  std::string msg;
  hid_t stack = H5Eget_current_stack();
  if (stack >= 0) {
    H5Ewalk2(stack, H5E_WALK_UPWARD, keep_innermost, &msg);
    H5Eclose_stack(stack);
  }
  return msg.empty() ? "" : " (" + msg + ")";
}

std::string dims_text(const std::vector<hsize_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

std::vector<hsize_t> dataset_dims(hid_t dset) {
  Hdf5Handle space(H5Dget_space(dset), H5Sclose);
  if (!space.ok()) return {};
  const int nd = H5Sget_simple_extent_ndims(space.get());
  if (nd <= 0) return {};
  std::vector<hsize_t> dims(static_cast<size_t>(nd));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

struct Candidates {
  std::vector<std::string> found;
  size_t more = 0;
};

// Adds `object` at `path` when it is a 2-D or 3-D dataset of numbers.
void add_candidate(Candidates& c, const std::string& path, hid_t object) {
  if (H5Iget_type(object) != H5I_DATASET) return;
  Hdf5Handle type(H5Dget_type(object), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) return;
  const auto dims = dataset_dims(object);
  if (dims.size() != 2 && dims.size() != 3) return;
  if (c.found.size() < 6) c.found.push_back(path + " (" + dims_text(dims) + ")");
  else
    ++c.more;
}

// Names the datasets the user may have meant, for the "not found" message.
std::string suggestions(hid_t file) {
  Candidates c;
  const bool cut = walk_hdf5(file, [&](const std::string& path, hid_t object) {
                     add_candidate(c, path, object);
                     return true;
                   }) == Hdf5WalkEnd::cut;
  if (c.found.empty() && cut)
    return "; no 2-D or 3-D dataset among the links listed (the listing stopped at its limit)";
  if (c.found.empty()) return "; the file holds no 2-D or 3-D dataset";
  std::string s = "; 2-D/3-D datasets in the file: ";
  for (size_t i = 0; i < c.found.size(); ++i) s += (i ? ", " : "") + c.found[i];
  if (c.more) s += " and " + std::to_string(c.more) + " more";
  if (cut) s += " (the listing stopped at its limit)";
  return s + " (choose one with --dataset)";
}

// True when every link on the way to `name` exists (H5Lexists needs the
// parents to exist, or it fails instead of answering no).
bool path_exists(hid_t file, hid_t lapl, const std::string& name) {
  size_t pos = 0;
  while (pos < name.size()) {
    size_t next = name.find('/', pos + 1);
    if (next == std::string::npos) next = name.size();
    const std::string prefix = name.substr(0, next);
    if (prefix != "/" && !prefix.empty() && H5Lexists(file, prefix.c_str(), lapl) <= 0) return false;
    pos = next;
  }
  return H5Oexists_by_name(file, name.c_str(), lapl) > 0;
}

// The first link on the way to `name` that is an external link, or "".
std::string external_link_on(hid_t file, hid_t lapl, const std::string& name) {
  size_t pos = 0;
  while (pos < name.size()) {
    size_t next = name.find('/', pos + 1);
    if (next == std::string::npos) next = name.size();
    const std::string prefix = name.substr(0, next);
    H5L_info_t info{};
    if (prefix != "/" && !prefix.empty() && H5Lexists(file, prefix.c_str(), lapl) > 0 &&
        H5Lget_info(file, prefix.c_str(), &info, lapl) >= 0 && info.type == H5L_TYPE_EXTERNAL)
      return prefix;
    pos = next;
  }
  return {};
}

// The fill values HDF5 returns for storage never written (a few-byte file
// announcing 2^31 rows read as zeros), external raw files and virtual
// datasets are refused; what is stored must be able to hold the `needed`
// bytes read, after deflate's largest expansion where a filter compresses.
void check_storage(const std::string& path, const std::string& name, hid_t dset, hid_t fspace, uint64_t needed) {
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  Hdf5Handle dcpl(H5Dget_create_plist(dset), H5Pclose);
  if (!dcpl.ok()) fail(path, "cannot read the layout of dataset '" + name + "'" + last_error());
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if (layout == H5D_VIRTUAL) fail(path, "dataset '" + name + "' is a virtual dataset (it maps other files); refused");
  if (H5Pget_external_count(dcpl.get()) > 0)
    fail(path, "dataset '" + name + "' keeps its data in external files; refused");
  // Storage beyond the end of the file is no storage.
  const uint64_t stored = ec ? H5Dget_storage_size(dset) : std::min<uint64_t>(H5Dget_storage_size(dset), file_size);
  if (layout == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(static_cast<size_t>(H5Sget_simple_extent_ndims(fspace)));
    H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
    hsize_t start[H5S_MAX_RANK], end[H5S_MAX_RANK];
    hsize_t wanted = 1, written = 0;
    if (H5Sget_select_bounds(fspace, start, end) >= 0)
      for (size_t i = 0; i < chunk.size(); ++i)
        if (chunk[i] > 0) wanted *= end[i] / chunk[i] - start[i] / chunk[i] + 1;
    if (H5Dget_num_chunks(dset, fspace, &written) >= 0 && written < wanted)
      fail(path, "dataset '" + name + "' has " + std::to_string(wanted - written) + " of its " +
                     std::to_string(wanted) + " chunks never written (they would read as fill values)");
  }
  if (needed > 0 && stored == 0)
    fail(path, "dataset '" + name + "' has no data written (it would read as fill values)");
  const bool filtered = layout == H5D_CHUNKED && H5Pget_nfilters(dcpl.get()) > 0;
  // Filters other than deflate (szip, scale-offset, plugins) may shrink
  // more; 2^16 bounds them loosely.
  uint64_t ratio = 1;
  if (filtered) {
    ratio = kDeflateMaxRatio;
    for (int i = 0; i < H5Pget_nfilters(dcpl.get()); ++i) {
      unsigned flags = 0, config = 0;
      size_t nelmts = 0;
      const H5Z_filter_t f = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nelmts, nullptr, 0, nullptr,
                                            &config);
      if (f != H5Z_FILTER_DEFLATE && f != H5Z_FILTER_SHUFFLE && f != H5Z_FILTER_FLETCHER32) ratio = uint64_t{1} << 16;
    }
  }
  check_announced(path, "the rows of dataset '" + name + "'", needed, stored, ratio);
}

std::string type_name(hid_t type, bool* numeric) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  *numeric = true;
  if (cls == H5T_INTEGER) {
    const bool sign = H5Tget_sign(type) == H5T_SGN_2;
    return std::string(sign ? "int" : "uint") + std::to_string(8 * size);
  }
  if (cls == H5T_FLOAT) return "float" + std::to_string(8 * size);
  *numeric = false;
  switch (cls) {
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_ARRAY: return "array";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_VLEN: return "variable-length";
    default: return "unknown";
  }
}

}  // namespace

Dataset read_hdf5(const std::string& path, const ReadOptions& opt) {
  const Hdf5Reading reading(path);
  std::string name = opt.hdf5_dataset.empty() ? kDefaultDataset : opt.hdf5_dataset;
  if (name[0] != '/') name = "/" + name;

  Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) fail(path, "cannot open as HDF5" + last_error());
  // Link traversal (lapl) and opening the dataset (dapl, which carries the
  // same link properties) both refuse external links.
  bool external = false;
  Hdf5Handle lapl(hdf5_access_refusing_external_links(H5P_LINK_ACCESS, &external), H5Pclose),
      dapl(hdf5_access_refusing_external_links(H5P_DATASET_ACCESS, &external), H5Pclose);
  if (!lapl.ok() || !dapl.ok()) fail(path, "cannot set up HDF5 link access" + last_error());
  if (const std::string link = external_link_on(file.get(), lapl.get(), name); !link.empty())
    fail(path, "'" + link + "' is an external link to another file; refused (copy the data into this file)");
  const bool exists = path_exists(file.get(), lapl.get(), name);
  if (external) fail(path, "'" + name + "' leads through an external link to another file; refused");
  if (!exists) fail(path, "no dataset '" + name + "'" + suggestions(file.get()));
  Hdf5Handle object(H5Oopen(file.get(), name.c_str(), lapl.get()), H5Oclose);
  if (external) fail(path, "'" + name + "' leads through an external link to another file; refused");
  if (!object.ok()) fail(path, "cannot open '" + name + "'" + last_error());
  if (H5Iget_type(object.get()) != H5I_DATASET)
    fail(path, "'" + name + "' is a group, not a dataset" + suggestions(file.get()));

  Hdf5Handle dset(H5Dopen2(file.get(), name.c_str(), dapl.get()), H5Dclose);
  if (external) fail(path, "'" + name + "' leads through an external link to another file; refused");
  if (!dset.ok()) fail(path, "cannot open dataset '" + name + "'" + last_error());
  Hdf5Handle type(H5Dget_type(dset.get()), H5Tclose);
  bool numeric = false;
  const std::string dtype = type_name(type.get(), &numeric);
  if (!numeric) fail(path, "dataset '" + name + "' holds " + dtype + " values; expected integers or floats");

  const std::vector<hsize_t> dims = dataset_dims(dset.get());
  if (dims.size() != 2 && dims.size() != 3)
    fail(path, "dataset '" + name + "' has shape " + (dims.empty() ? std::string("scalar") : dims_text(dims)) +
                   "; expected N x d or N x h x w");
  std::vector<int64_t> sdims(dims.begin(), dims.end());
  checked_count(path, sdims, sizeof(float));
  const std::vector<int64_t> item(sdims.begin() + 1, sdims.end());
  int64_t d = 1;
  for (int64_t x : item) d *= x;
  if (d == 0) fail(path, "dataset '" + name + "' of shape " + dims_text(dims) + " holds no values per item");
  int64_t n = sdims[0];
  if (opt.max_rows >= 0) n = std::min(n, opt.max_rows);

  std::vector<float> v;
  if (n > 0) {
    std::vector<hsize_t> start(dims.size(), 0), count(dims);
    count[0] = static_cast<hsize_t>(n);
    Hdf5Handle fspace(H5Dget_space(dset.get()), H5Sclose);
    Hdf5Handle mspace(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    if (!fspace.ok() || !mspace.ok() ||
        H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
      fail(path, "cannot select rows of dataset '" + name + "'" + last_error());
    check_storage(path, name, dset.get(), fspace.get(), static_cast<uint64_t>(n * d) * H5Tget_size(type.get()));
    allocate(path, v, static_cast<size_t>(n * d), std::to_string(n) + " x " + std::to_string(d) + " float32 values");
    if (H5Dread(dset.get(), H5T_NATIVE_FLOAT, mspace.get(), fspace.get(), H5P_DEFAULT, v.data()) < 0)
      fail(path, "cannot read dataset '" + name + "'" + last_error());
  }
  Dataset ds(n, d, std::move(v));
  ds.item_shape = item;
  ds.source_dtype = dtype;
  ds.format = "hdf5";
  return ds;
}

bool read_cxi_mask(const std::string& path, CxiMask* out) {
  const Hdf5Reading reading(path);
  Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) fail(path, "cannot open as HDF5" + last_error());
  bool external = false;
  Hdf5Handle lapl(hdf5_access_refusing_external_links(H5P_LINK_ACCESS, &external), H5Pclose);
  if (!lapl.ok()) fail(path, "cannot set up HDF5 link access" + last_error());
  // The CXI places of a detector's mask, in the order CXI readers look.
  std::string name;
  for (const char* candidate : {"/entry_1/data_1/mask", "/entry_1/instrument_1/detector_1/mask"}) {
    if (const std::string link = external_link_on(file.get(), lapl.get(), candidate); !link.empty())
      fail(path, "'" + link + "' is an external link to another file; refused (copy the mask into this file)");
    if (path_exists(file.get(), lapl.get(), candidate) && !external) {
      name = candidate;
      break;
    }
  }
  if (external) fail(path, "the mask leads through an external link to another file; refused");
  if (name.empty()) return false;
  Hdf5Handle dset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dset.ok()) fail(path, "cannot open the mask '" + name + "'" + last_error());
  Hdf5Handle type(H5Dget_type(dset.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER) {
    bool numeric = false;
    fail(path, "the mask '" + name + "' holds " + type_name(type.get(), &numeric) +
                   " values; a CXI mask holds integer pixel-mask bits");
  }
  const std::vector<hsize_t> dims = dataset_dims(dset.get());
  if (dims.size() != 2 && dims.size() != 3)
    fail(path, "the mask '" + name + "' has shape " + (dims.empty() ? std::string("scalar") : dims_text(dims)) +
                   "; expected h x w (every frame) or N x h x w (per frame)");
  std::vector<int64_t> sdims(dims.begin(), dims.end());
  const int64_t count = checked_count(path, sdims, sizeof(uint32_t));
  Hdf5Handle fspace(H5Dget_space(dset.get()), H5Sclose);
  if (!fspace.ok() || H5Sselect_all(fspace.get()) < 0)
    fail(path, "cannot select the mask '" + name + "'" + last_error());
  check_storage(path, name, dset.get(), fspace.get(), static_cast<uint64_t>(count) * H5Tget_size(type.get()));
  out->name = name;
  out->dims = sdims;
  allocate(path, out->bits, static_cast<size_t>(count), "the mask '" + name + "'");
  if (count > 0 && H5Dread(dset.get(), H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->bits.data()) < 0)
    fail(path, "cannot read the mask '" + name + "'" + last_error());
  return true;
}

}  // namespace manifold::io
