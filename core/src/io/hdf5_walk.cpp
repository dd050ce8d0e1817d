#include "hdf5_walk.h"

#include <cstring>
#include <set>
#include <utility>

namespace manifold::io {

namespace {

// A corrupt file may hold any number of links, names of any length and
// groups nested without end; real files' paths are a few levels deep.
constexpr size_t kMaxLinks = 10000;
constexpr size_t kMaxPath = 1024;
constexpr int kMaxDepth = 32;

// A hard link's target is opened by its place in the file, not by the link's
// name: looking a name up again could meet another link of the same name in
// a corrupt group, a soft or external one. The same place recognises a group
// reached twice. HDF5 1.12 names that place a token, 1.10 an address.
#if H5_VERSION_GE(1, 12, 0)
using LinkInfo = H5L_info2_t;
using Place = H5O_token_t;
Place target_of(const LinkInfo& link) { return link.u.token; }
hid_t open_at(hid_t file, const Place& place) { return H5Oopen_by_token(file, place); }
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
Place target_of(const LinkInfo& link) { return link.u.address; }
hid_t open_at(hid_t file, const Place& place) { return H5Oopen_by_addr(file, place); }
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

class OpenObject {
 public:
  explicit OpenObject(hid_t id) : id_(id) {}
  ~OpenObject() {
    if (id_ >= 0) H5Oclose(id_);
  }
  OpenObject(const OpenObject&) = delete;
  OpenObject& operator=(const OpenObject&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
};

struct Walk {
  hid_t file;
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

herr_t on_link(hid_t, const char* name, const LinkInfo* info, void* data) {
  auto& w = *static_cast<Walk*>(data);
  if (++w.links > kMaxLinks) return w.stop(Hdf5WalkEnd::cut);
  if (info->type != H5L_TYPE_HARD) return 0;
  if (w.path.size() + 1 + std::strlen(name) > kMaxPath) {
    w.cut();
    return 0;
  }
  const std::string path = w.path + "/" + name;
  const Place place = target_of(*info);
  OpenObject object(open_at(w.file, place));
  if (object.get() < 0) return 0;  // unreadable: the walk goes on without it
  if (!w.visit(path, object.get())) return w.stop(Hdf5WalkEnd::stopped);
  if (H5Iget_type(object.get()) != H5I_GROUP) return 0;
  return list_group(w, object.get(), place, path);
}

}  // namespace

Hdf5WalkEnd walk_hdf5(hid_t file, const Hdf5Visitor& visit) {
  Walk w{file, visit, std::set<Place, PlaceLess>(PlaceLess{file}), {}};
  Place root;
  if (!place_of(file, &root)) return Hdf5WalkEnd::complete;  // no readable root group: nothing below it
  list_group(w, file, root, "");
  return w.end;
}

}  // namespace manifold::io
