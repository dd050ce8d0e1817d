#pragma once
// A bounded walk over the objects of an HDF5 file, for listing its datasets
// (the dataset reader's suggestions, the metadata search). It lists one group
// at a time with H5Literate and recurses itself: libhdf5's own recursive
// listing, H5Lvisit, reads past a link name inside the library
// (H5G__visit_cb) on some corrupt files, so it is not used.
#include <hdf5.h>

#include <functional>
#include <string>

namespace manifold::io {

/// Called for each object a hard link names: its path from the root
/// ("/a/b/data") and the object, open until the call returns (a dataset, a
/// group or a named datatype: H5Iget_type tells). Returns false to end the walk.
using Hdf5Visitor = std::function<bool(const std::string& path, hid_t object)>;

enum class Hdf5WalkEnd {
  complete,  ///< every object reachable by hard links was visited
  stopped,   ///< the visitor ended the walk
  cut,       ///< a limit of the walk left part of the file out (a corrupt or hostile file)
};

/// Visits the objects below the root group of `file`, depth first, each
/// group's links in name order, a group's own links right after the group.
/// Only hard links are followed: soft, external and user-defined links are
/// skipped, so a file cannot send the walk to another file or round in
/// circles by name. Each group is listed once (hard links can make a group
/// its own descendant; a group reached again is visited but not listed again).
/// Bounded: at most 10000 links, paths of at most 1024 characters, 32 levels.
Hdf5WalkEnd walk_hdf5(hid_t file, const Hdf5Visitor& visit);

/// A property list of class `plist_class` (H5P_LINK_ACCESS, or
/// H5P_DATASET_ACCESS for H5Dopen2) on which following an external link
/// fails, setting `*refused` where given: a file handed to us must not make
/// us open another file named inside it. -1 where it cannot be made.
hid_t hdf5_access_refusing_external_links(hid_t plist_class, bool* refused = nullptr);

}  // namespace manifold::io
