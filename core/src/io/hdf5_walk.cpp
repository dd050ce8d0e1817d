#include "hdf5_walk.h"

#include <cstring>
#include <set>
#include <utility>

#include "hdf5_handle.h"

namespace manifold::io {

namespace {

// Following an external link fails; `seen`, where given, records that one was met.
herr_t refuse_external_link(const char*, const char*, const char*, const char*, unsigned*, hid_t, void* seen) {
  if (seen) *static_cast<bool*>(seen) = true;
  return -1;
}

// A corrupt file may hold any number of links, names of any length and
// groups nested without end; real files' paths are a few levels deep.
constexpr size_t kMaxLinks = 10000;
constexpr size_t kMaxPath = 1024;
constexpr int kMaxDepth = 32;

// A group reached twice is recognised by its place in the file: a token in
// HDF5 1.12 and later, an address in 1.10.
#if H5_VERSION_GE(1, 12, 0)
using LinkInfo = H5L_info2_t;
using Place = H5O_token_t;
bool place_of(hid_t object, Place* place) {
  H5O_info2_t info;
  if (H5Oget_info3(object, &info, H5O_INFO_BASIC) < 0) return false;
  *place = info.token;
  return true;
}
struct PlaceLess {
  hid_t file;
  bool operator()(const Place& a, const Place& b) const {
    int cmp = 0;
    H5Otoken_cmp(file, &a, &b, &cmp);
    return cmp < 0;
  }
};
herr_t list_links(hid_t group, H5L_iterate2_t op, void* data) {
  return H5Literate2(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, op, data);
}
#else
using LinkInfo = H5L_info_t;
using Place = haddr_t;
bool place_of(hid_t object, Place* place) {
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_BASIC) < 0) return false;
  *place = info.addr;
  return true;
}
struct PlaceLess {
  hid_t file;
  bool operator()(const Place& a, const Place& b) const { return a < b; }
};
herr_t list_links(hid_t group, H5L_iterate_t op, void* data) {
  return H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, op, data);
}
#endif

// Link access for opening a hard link's target by its name. Opening by name
// lets libhdf5 check a group as it does on every lookup: opened by address, a
// group that fails those checks crashes H5Literate in libhdf5 1.10.8
// (tests/fuzz/corpus/hdf5/regression-huge-local-heap.h5). The name is looked
// up anew, and a corrupt group may hold another link of that name: an
// external one must not open another file.
hid_t link_access() { return hdf5_access_refusing_external_links(H5P_LINK_ACCESS); }

struct Walk {
  hid_t lapl;
  const Hdf5Visitor& visit;
  std::set<Place, PlaceLess> listed;  // the groups whose links were listed
  std::string path;                   // of the group being listed; "" for the root
  int depth = 0;
  size_t links = 0;
  Hdf5WalkEnd end = Hdf5WalkEnd::complete;

  void cut() { end = Hdf5WalkEnd::cut; }
  // A positive value ends H5Literate at once, without an error, at every level.
  herr_t stop(Hdf5WalkEnd why) {
    if (end != Hdf5WalkEnd::cut) end = why;
    return 1;
  }
};

herr_t on_link(hid_t group, const char* name, const LinkInfo* info, void* data);

// Lists the links of `group` (at `path`, in the file at `place`) and walks
// below them, unless it was listed before. Positive when the walk ends.
herr_t list_group(Walk& w, hid_t group, const Place& place, const std::string& path) {
  if (w.listed.count(place)) return 0;
  if (w.depth == kMaxDepth) {
    w.cut();
    return 0;
  }
  w.listed.insert(place);
  const std::string outer = std::exchange(w.path, path);
  ++w.depth;
  const herr_t result = list_links(group, on_link, &w);
  --w.depth;
  w.path = outer;
  // A negative result (a group too corrupt to list) ends only that group's listing.
  return result > 0 ? result : 0;
}

herr_t on_link(hid_t group, const char* name, const LinkInfo* info, void* data) {
  auto& w = *static_cast<Walk*>(data);
  if (++w.links > kMaxLinks) return w.stop(Hdf5WalkEnd::cut);
  // A name holding '/' would be looked up as a path, through links of any kind.
  if (info->type != H5L_TYPE_HARD || std::strchr(name, '/')) return 0;
  if (w.path.size() + 1 + std::strlen(name) > kMaxPath) {
    w.cut();
    return 0;
  }
  const std::string path = w.path + "/" + name;
  Hdf5Handle object(H5Oopen(group, name, w.lapl), H5Oclose);
  if (object.get() < 0) return 0;  // unreadable: the walk goes on without it
  if (!w.visit(path, object.get())) return w.stop(Hdf5WalkEnd::stopped);
  Place place;
  if (H5Iget_type(object.get()) != H5I_GROUP || !place_of(object.get(), &place)) return 0;
  return list_group(w, object.get(), place, path);
}

}  // namespace

hid_t hdf5_access_refusing_external_links(hid_t plist_class, bool* refused) {
  const hid_t plist = H5Pcreate(plist_class);
  if (plist >= 0 && H5Pset_elink_cb(plist, refuse_external_link, refused) < 0) {
    H5Pclose(plist);
    return -1;
  }
  return plist;
}

Hdf5WalkEnd walk_hdf5(hid_t file, const Hdf5Visitor& visit) {
  Hdf5Handle lapl(link_access(), H5Pclose);
  Place root;
  if (lapl.get() < 0 || !place_of(file, &root)) return Hdf5WalkEnd::complete;  // nothing that can be walked
  Walk w{lapl.get(), visit, std::set<Place, PlaceLess>(PlaceLess{file}), {}};
  list_group(w, file, root, "");
  return w.end;
}

}  // namespace manifold::io
