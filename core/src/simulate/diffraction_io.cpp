// Writers of simulated diffraction: .npy with the ground truth beside it, or
// one CXI (HDF5) file.
#include <hdf5.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <unistd.h>

#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/settings.h"
#include "manifold/simulate.h"
#include "../io/hdf5_handle.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string stem_of(const std::string& path, const std::string& ext) {
  return path.substr(0, path.size() - ext.size());
}

/// A handle on an HDF5 object just created; a failure is an Error naming it.
io::Hdf5Handle created(hid_t id, herr_t (*close)(hid_t), const std::string& what, const std::string& path) {
  if (id < 0) throw Error(path + ": HDF5 cannot create " + what);
  return io::Hdf5Handle(id, close);
}

void check(herr_t status, const std::string& what, const std::string& path) {
  if (status < 0) throw Error(path + ": HDF5 failed to write " + what + " (disk full?)");
}

void write_dataset(hid_t parent, const char* name, hid_t type, const std::vector<hsize_t>& dims, const void* data,
                   const std::string& path) {
  const io::Hdf5Handle space = created(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
                                       "dataspace", path);
  const io::Hdf5Handle dset = created(H5Dcreate2(parent, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                                 H5P_DEFAULT),
                                      H5Dclose, name, path);
  check(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name, path);
}

void write_string(hid_t parent, const char* name, const std::string& value, const std::string& path) {
  const io::Hdf5Handle type = created(H5Tcopy(H5T_C_S1), H5Tclose, "string type", path);
  check(H5Tset_size(type.get(), std::max<size_t>(1, value.size())), "string type", path);
  const io::Hdf5Handle space = created(H5Screate(H5S_SCALAR), H5Sclose, "dataspace", path);
  const io::Hdf5Handle dset = created(H5Dcreate2(parent, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                                 H5P_DEFAULT),
                                      H5Dclose, name, path);
  check(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.c_str()), name, path);
}

io::Hdf5Handle group(hid_t parent, const char* name, const std::string& path) {
  return created(H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, name, path);
}

void write_cxi(const std::string& target, const std::string& tmp, const DiffractionImages& d) {
  // HDF5 would print its own error stack to stderr; the Error below says it in one line.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  {
    const io::Hdf5Handle file = created(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose,
                                        "the file", target);
    const int version = 150;
    write_dataset(file.get(), "cxi_version", H5T_NATIVE_INT, {1}, &version, target);
    const io::Hdf5Handle entry = group(file.get(), "entry_1", target);
    const io::Hdf5Handle data = group(entry.get(), "data_1", target);
    const hsize_t n = static_cast<hsize_t>(d.count), s = static_cast<hsize_t>(d.size);
    write_dataset(data.get(), "data", H5T_NATIVE_FLOAT, {n, s, s}, d.images.data(), target);
    if (!d.pixel_mask.empty())  // CXI pixel-mask bits, one mask for every frame
      write_dataset(data.get(), "mask", H5T_NATIVE_UINT32, {s, s}, d.pixel_mask.data(), target);
    {
      const io::Hdf5Handle inst = group(entry.get(), "instrument_1", target);
      const io::Hdf5Handle det = group(inst.get(), "detector_1", target);
      // CXI readers look for the frames (and the mask) under the detector too; a hard link shares the data.
      check(H5Lcreate_hard(file.get(), "/entry_1/data_1/data", det.get(), "data", H5P_DEFAULT, H5P_DEFAULT),
            "detector link", target);
      if (!d.pixel_mask.empty())
        check(H5Lcreate_hard(file.get(), "/entry_1/data_1/mask", det.get(), "mask", H5P_DEFAULT, H5P_DEFAULT),
              "detector mask link", target);
    }
    const io::Hdf5Handle sample = group(entry.get(), "sample_1", target);
    write_string(sample.get(), "name", d.metadata.value("pdb_id", std::string("molecule")), target);
    write_dataset(sample.get(), "orientation_quaternion", H5T_NATIVE_DOUBLE, {n, 4}, d.quaternions.data(), target);
    if (!d.angles.empty()) {
      write_dataset(sample.get(), "rotation_angle", H5T_NATIVE_DOUBLE, {n}, d.angles.data(), target);
      write_string(sample.get(), "rotation_axis", d.axis, target);
    }
    if (!d.labels.empty())  // class names in simulation_parameters ("classes")
      write_dataset(sample.get(), "hit_class", H5T_NATIVE_INT32, {n}, d.labels.data(), target);
    write_string(entry.get(), "simulation_parameters", d.metadata.dump(), target);
    check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), "the file", target);
  }
}

}  // namespace

std::string mask_path(const std::string& npy_path) {
  return (ends_with(npy_path, ".npy") ? stem_of(npy_path, ".npy") : npy_path) + ".mask.npy";
}

std::string ground_truth_path(const std::string& npy_path, const DiffractionImages& d) {
  const std::string stem = ends_with(npy_path, ".npy") ? stem_of(npy_path, ".npy") : npy_path;
  return stem + (d.angles.empty() ? ".quaternions.npy" : ".angles.npy");
}

void write_diffraction(const std::string& path, const DiffractionImages& d) {
  const bool cxi = ends_with(path, ".cxi") || ends_with(path, ".h5");
  if (!cxi && !ends_with(path, ".npy")) throw UsageError("-o " + path + ": the output must end in .npy or .cxi");
  if (d.images.size() != static_cast<size_t>(d.count * d.size * d.size))
    throw Error(path + ": image array does not match " + std::to_string(d.count) + " x " + std::to_string(d.size) +
                " x " + std::to_string(d.size));
  fs::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  const std::string base = p.filename().string();
  if (fs::is_directory(p)) throw Error(path + ": is a directory");
  OutputTransaction tx(dir);
  if (cxi) {
    write_cxi(path, tx.path(base), d);
  } else {
    const int64_t n = d.count, s = d.size;
    npy::write(tx.path(base), d.images.data(), {n, s, s});
    const std::string truth = fs::path(ground_truth_path(path, d)).filename().string();
    if (d.angles.empty()) npy::write(tx.path(truth), d.quaternions.data(), {n, 4});
    else
      npy::write(tx.path(truth), d.angles.data(), {n});
    // Hit classes as NAME.labels.npy (the metadata readers find it); names in NAME.json "classes".
    if (!d.labels.empty()) npy::write(tx.path(stem_of(base, ".npy") + ".labels.npy"), d.labels.data(), {n});
    // The detector's mask as NAME.mask.npy (1 = valid), where the readers find it.
    if (!d.pixel_mask.empty()) {
      std::vector<uint8_t> valid(d.pixel_mask.size());
      for (size_t k = 0; k < valid.size(); ++k) valid[k] = d.pixel_mask[k] == 0 ? 1 : 0;
      npy::write(tx.path(mask_path(base)), valid.data(), {s, s});
    }
    write_text_file(tx.path(stem_of(base, ".npy") + ".json"), d.metadata.dump(2) + "\n");
  }
  tx.commit();
}

std::vector<std::string> pdb_search_path() {
  std::vector<std::string> dirs;
  // MANIFOLD_PDB_PATH (folders separated by ':') replaces the system folders.
  const std::optional<std::vector<std::string>>& user_dirs = settings().pdb_path;
  const bool user_path = user_dirs.has_value();
  if (user_path) dirs = *user_dirs;
  // The structures bundled with Manifold (resources/pdb), found beside the
  // executable: installed (PREFIX/bin -> PREFIX/share/manifold/pdb) or in a
  // build folder of the source tree (build/app or build/tests -> resources/pdb).
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.has_parent_path()) {
    const fs::path bin = exe.parent_path();
    for (const fs::path& d : {bin / ".." / "share" / "manifold" / "pdb", bin / ".." / ".." / "resources" / "pdb",
                              bin / ".." / ".." / ".." / "resources" / "pdb"})
      if (fs::is_directory(d, ec)) dirs.push_back(d.lexically_normal().string());
  }
  // Debian's freesasa package ships a few real structures as test data.
  if (!user_path) dirs.push_back("/usr/share/freesasa/test-data");
  return dirs;
}

std::string find_packaged_pdb(const std::string& id) {
  std::string searched;
  for (const std::string& dir : pdb_search_path()) {
    const fs::path p = fs::path(dir) / (id + ".pdb");
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
    searched += (searched.empty() ? "" : ", ") + dir;
  }
  throw Error(id + ".pdb: not found in " + (searched.empty() ? std::string("no folder") : searched) +
              "; pass --pdb FILE, set MANIFOLD_PDB_PATH, or install Debian's freesasa package");
}

}  // namespace manifold
