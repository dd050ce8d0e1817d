// Metadata loaders: .npy, .csv/.tsv, HDF5/CXI datasets and MNIST IDX labels
// (see metadata.h for the formats and the rules for kinds and units).
#include <hdf5.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "manifold/error.h"
#include "manifold/metadata.h"
#include "manifold/npy.h"
#include "../io/hdf5_handle.h"
#include "../io/hdf5_walk.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw Error(path + ": " + what); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string source_of(const std::string& file, const std::string& column) {
  return column.empty() ? file : file + ":" + column;
}

// ---- kinds -------------------------------------------------------------------

bool names_an_angle(const std::string& name) {
  const std::string n = lower(name);
  for (const char* word : {"angle", "theta", "azimuth", "rotation"})
    if (n.find(word) != std::string::npos) return true;
  return false;
}

/// Degrees when the name says so or a value lies beyond one turn in radians.
AngleUnit angle_unit(const std::string& name, const std::vector<double>& v) {
  if (lower(name).find("deg") != std::string::npos) return AngleUnit::Degrees;
  for (double x : v)
    if (std::abs(x) > 2 * M_PI * (1 + 1e-9)) return AngleUnit::Degrees;
  return AngleUnit::Radians;
}

MetadataColumn categorical_from_integers(std::string name, std::string source, const std::vector<double>& v,
                                         const std::vector<std::string>& names = {});

/// A name that says its integers are classes, not quantities: one of its
/// words (split at anything but letters and digits) is label, class,
/// category, cluster, run, group, type, id or batch.
bool names_a_category(const std::string& name) {
  static const char* kWords[] = {"label", "labels", "class", "category", "cluster",
                                 "run",   "group",  "type",  "id",       "batch"};
  std::string word;
  const std::string n = lower(name) + " ";
  for (char ch : n) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      word += ch;
      continue;
    }
    for (const char* w : kWords)
      if (word == w) return true;
    word.clear();
  }
  return false;
}

bool all_integers(const std::vector<double>& v) {
  bool any = false;
  for (double x : v) {
    if (std::isnan(x)) continue;
    if (!std::isfinite(x) || x != std::floor(x) || std::abs(x) > 9e15) return false;
    any = true;
  }
  return any;
}

/// Numbers become an angle column by name (or when `angle`), a categorical
/// one when the name names classes and every value is an integer, else numeric.
MetadataColumn numeric_column(std::string name, std::string source, std::vector<double> values, bool angle) {
  if (!angle && !names_an_angle(name) && names_a_category(name) && all_integers(values))
    return categorical_from_integers(std::move(name), std::move(source), values);
  MetadataColumn c;
  c.name = std::move(name);
  c.source = std::move(source);
  c.kind = angle || names_an_angle(c.name) ? MetadataKind::Angle : MetadataKind::Numeric;
  if (c.kind == MetadataKind::Angle) c.unit = angle_unit(c.name, values);
  c.values = std::move(values);
  return c;
}

/// Categories from text: codes follow the sorted names, so the same set of
/// names always gets the same codes (and colours); "" is missing (-1).
MetadataColumn categorical_from_text(std::string name, std::string source, const std::vector<std::string>& text) {
  MetadataColumn c;
  c.name = std::move(name);
  c.source = std::move(source);
  c.kind = MetadataKind::Categorical;
  std::map<std::string, int32_t> code;
  for (const auto& t : text)
    if (!t.empty()) code.emplace(t, 0);
  for (auto& [k, v] : code) {
    v = static_cast<int32_t>(c.categories.size());
    c.categories.push_back(k);
  }
  c.codes.reserve(text.size());
  for (const auto& t : text) c.codes.push_back(t.empty() ? -1 : code[t]);
  return c;
}

/// Categories from integer labels: code = the label when labels are small
/// non-negative integers (0..9 stay 0..9 in every subset, so colours are
/// stable), else the rank among the distinct labels. `names` replaces the
/// numbers as category names when it has one per code.
MetadataColumn categorical_from_integers(std::string name, std::string source, const std::vector<double>& v,
                                         const std::vector<std::string>& names) {
  MetadataColumn c;
  c.name = std::move(name);
  c.source = std::move(source);
  c.kind = MetadataKind::Categorical;
  double lo = 0, hi = -1;
  for (double x : v) {
    if (std::isnan(x)) continue;  // missing
    if (x != std::floor(x) || !std::isfinite(x))
      fail(c.source, "labels must be integers (found " + std::to_string(x) + ")");
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  const bool direct = lo >= 0 && hi < 65536;
  std::vector<double> distinct;
  if (direct) {
    for (int64_t k = 0; k <= static_cast<int64_t>(hi); ++k) distinct.push_back(static_cast<double>(k));
  } else {
    for (double x : v)
      if (!std::isnan(x)) distinct.push_back(x);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  }
  for (double d : distinct) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", d);
    c.categories.push_back(buf);
  }
  if (!names.empty()) {
    if (names.size() < c.categories.size())
      fail(c.source, std::to_string(c.categories.size()) + " categories but the class-name list has " +
                         std::to_string(names.size()));
    for (size_t k = 0; k < c.categories.size(); ++k) c.categories[k] = names[k];
  }
  c.codes.reserve(v.size());
  for (double x : v)
    c.codes.push_back(std::isnan(x) ? -1
                      : direct      ? static_cast<int32_t>(x)
                                    : static_cast<int32_t>(std::lower_bound(distinct.begin(), distinct.end(), x) -
                                                      distinct.begin()));
  return c;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// ---- .npy ----------------------------------------------------------------------

/// NAME.angles.npy -> "angle", NAME.labels.npy -> "label", else the stem.
std::string npy_column_name(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  name.resize(name.size() - 4);
  if (ends_with(name, ".angles") || name == "angles") return "angle";
  if (ends_with(name, ".quaternions") || name == "quaternions") return "quaternion";
  if (ends_with(name, ".labels") || name == "labels") return "label";
  return name;
}

/// Names for the codes of NAME.labels.npy: a class-name list beside it, else
/// the "classes" of NAME.json (what simulate diffraction --mix writes), else none.
std::vector<std::string> label_names(const std::string& labels_file) {
  if (const std::string list = class_names_beside(labels_file); !list.empty()) return read_lines(list);
  std::string json = labels_file;
  json.resize(json.size() - std::string(".labels.npy").size());
  json += ".json";
  std::error_code ec;
  if (!ends_with(labels_file, ".labels.npy") || !fs::is_regular_file(json, ec)) return {};
  try {
    std::ifstream in(json);
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.contains("classes") && j["classes"].is_array()) return j["classes"].get<std::vector<std::string>>();
  } catch (const std::exception&) {
    // Not ours to judge: a JSON beside the data without usable names leaves the numbers.
  }
  return {};
}

std::vector<MetadataColumn> load_npy(const MetadataSpec& spec) {
  std::vector<int64_t> shape;
  std::vector<double> v = npy::read<double>(spec.file, &shape);
  if (shape.empty() || shape.size() > 2)
    fail(spec.file, "expected N or N x m values for metadata (found " + std::to_string(shape.size()) + " dimensions)");
  const std::string base = npy_column_name(spec.file);
  const std::string name = spec.column.empty() ? base : spec.column;
  const bool labels = base == "label", angles = base == "angle";
  if (shape.size() == 1) {
    if (labels) return {categorical_from_integers(name, spec.file, v, label_names(spec.file))};
    return {numeric_column(name, spec.file, std::move(v), angles)};
  }
  const int64_t n = shape[0], m = shape[1];
  std::vector<MetadataColumn> out;
  for (int64_t c = 0; c < m; ++c) {
    std::vector<double> col(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) col[static_cast<size_t>(i)] = v[static_cast<size_t>(i * m + c)];
    out.push_back(numeric_column(name + "_" + std::to_string(c), spec.file, std::move(col), angles));
  }
  return out;
}

// ---- .csv / .tsv -------------------------------------------------------------------

/// One RFC 4180 record per call: fields split at `sep`, "..." quoted fields
/// with "" for a quote and line breaks inside; unquoted fields trimmed.
class DelimitedReader {
 public:
  DelimitedReader(const std::string& path, char sep) : path_(path), sep_(sep) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
    std::ostringstream ss;
    ss << in.rdbuf();
    text_ = ss.str();
    if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;  // UTF-8 byte-order mark
  }
  int line() const { return record_line_; }
  bool next(std::vector<std::string>& fields) {
    fields.clear();
    while (pos_ < text_.size() && (text_[pos_] == '\n' || text_[pos_] == '\r')) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
    if (pos_ >= text_.size()) return false;
    record_line_ = line_;
    for (;;) {
      field_index_ = static_cast<int>(fields.size()) + 1;
      fields.push_back(field());
      if (pos_ >= text_.size()) return true;
      const char c = text_[pos_++];
      if (c == sep_) continue;
      if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
      ++line_;
      return true;
    }
  }
  /// "FILE:LINE: " for messages.
  std::string where() const { return path_ + ":" + std::to_string(record_line_); }

 private:
  std::string field() {
    size_t start = pos_;
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t') && text_[pos_] != sep_) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '"') {
      const int opened = line_;
      std::string out;
      for (++pos_;; ++pos_) {
        if (pos_ >= text_.size())
          throw Error(path_ + ":" + std::to_string(opened) + ": field " + std::to_string(field_number()) +
                      ": unterminated quote");
        const char c = text_[pos_];
        if (c == '"') {
          if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
            out += '"';
            ++pos_;
            continue;
          }
          ++pos_;
          break;
        }
        if (c == '\n') ++line_;
        out += c;
      }
      while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t') && text_[pos_] != sep_) ++pos_;
      if (pos_ < text_.size() && text_[pos_] != sep_ && text_[pos_] != '\n' && text_[pos_] != '\r')
        throw Error(path_ + ":" + std::to_string(line_) + ": field " + std::to_string(field_number()) +
                    ": text after a closing quote");
      return out;
    }
    pos_ = start;
    while (pos_ < text_.size() && text_[pos_] != sep_ && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
    std::string out = text_.substr(start, pos_ - start);
    const auto b = out.find_first_not_of(" \t"), e = out.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : out.substr(b, e - b + 1);
  }
  int field_number() const { return field_index_; }

  std::string path_, text_;
  char sep_;
  size_t pos_ = 0;
  int line_ = 1, record_line_ = 1;
  int field_index_ = 1;  ///< 1-based field of the record being read, for messages
};

bool is_missing(const std::string& s) {
  const std::string l = lower(s);
  return l.empty() || l == "nan" || l == "na" || l == "n/a" || l == "null";
}

bool parse_number(const std::string& s, double* v) {
  if (is_missing(s)) {
    *v = std::nan("");
    return true;
  }
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == 0 && errno != ERANGE && std::isfinite(*v);
}

std::vector<MetadataColumn> load_delimited(const MetadataSpec& spec, char sep) {
  DelimitedReader in(spec.file, sep);
  std::vector<std::string> header, fields;
  if (!in.next(header)) fail(spec.file, "empty (expected a header line naming the columns)");
  for (size_t c = 0; c < header.size(); ++c)
    if (header[c].empty())
      fail(spec.file + ":" + std::to_string(in.line()),
           "column " + std::to_string(c + 1) + " has no name in the header");
  int selected = -1;
  if (!spec.column.empty()) {
    auto it = std::find(header.begin(), header.end(), spec.column);
    if (it == header.end()) {
      std::string names;
      for (const auto& h : header) names += (names.empty() ? "" : ", ") + h;
      fail(spec.file, "no column '" + spec.column + "' (columns: " + names + ")");
    }
    selected = static_cast<int>(it - header.begin());
  }
  std::vector<std::vector<std::string>> text(header.size());
  while (in.next(fields)) {
    if (fields.size() != header.size())
      throw Error(in.where() + ": " + std::to_string(fields.size()) + " fields but the header has " +
                  std::to_string(header.size()) + " (" +
                  (fields.size() < header.size() ? "column '" + header[fields.size()] + "' missing"
                                                 : "extra field after '" + header.back() + "'") +
                  ")");
    for (size_t c = 0; c < fields.size(); ++c) text[c].push_back(std::move(fields[c]));
  }
  std::vector<MetadataColumn> out;
  for (size_t c = 0; c < header.size(); ++c) {
    if (selected >= 0 && static_cast<int>(c) != selected) continue;
    std::vector<double> v(text[c].size());
    bool numeric = true;
    for (size_t i = 0; i < v.size() && numeric; ++i) numeric = parse_number(text[c][i], &v[i]);
    const std::string source = source_of(spec.file, header[c]);
    if (numeric) out.push_back(numeric_column(header[c], source, std::move(v), false));
    else
      out.push_back(categorical_from_text(header[c], source, text[c]));
  }
  return out;
}

// ---- HDF5 / CXI ------------------------------------------------------------------------

std::vector<std::string> read_hdf5_strings(hid_t dset, hid_t type, hsize_t n, const std::string& where) {
  std::vector<std::string> out;
  out.reserve(n);
  if (H5Tis_variable_str(type) > 0) {
    io::Hdf5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    std::vector<char*> p(n, nullptr);
    if (H5Dread(dset, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()) < 0) fail(where, "cannot read the strings");
    for (char* s : p) out.emplace_back(s ? s : "");
    io::Hdf5Handle space(H5Dget_space(dset), H5Sclose);
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, p.data());
  } else {
    const size_t size = H5Tget_size(type);
    io::Hdf5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), size);
    std::vector<char> buf(n * size);
    if (H5Dread(dset, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) fail(where, "cannot read the strings");
    for (hsize_t i = 0; i < n; ++i) {
      std::string s(buf.data() + i * size, size);
      s.resize(std::strlen(s.c_str()));
      while (!s.empty() && s.back() == ' ') s.pop_back();
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<MetadataColumn> load_hdf5(const MetadataSpec& spec) {
  if (spec.column.empty())
    fail(spec.file, "name the dataset inside the HDF5 file (" + spec.file + ":/entry_1/sample_1/...)");
  const std::string where = source_of(spec.file, spec.column);
  const io::Hdf5Reading reading(spec.file);
  io::Hdf5Handle file(H5Fopen(spec.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) fail(spec.file, "not an HDF5 file or unreadable");
  // As the dataset reader: the file must not make us open another one.
  bool external = false;
  io::Hdf5Handle lapl(io::hdf5_access_refusing_external_links(H5P_LINK_ACCESS, &external), H5Pclose);
  if (!lapl.ok()) fail(spec.file, "cannot set up HDF5 link access");
  const bool exists = H5Lexists(file.get(), spec.column.c_str(), lapl.get()) > 0 &&
                      H5Oexists_by_name(file.get(), spec.column.c_str(), lapl.get()) > 0;
  const std::string through = "'" + spec.column + "' leads through an external link to another file";
  const auto refuse_external = [&] {
    if (external) fail(spec.file, through + "; refused (copy the data into this file)");
  };
  refuse_external();
  if (!exists) fail(spec.file, "no dataset '" + spec.column + "'");
  io::Hdf5Handle dset(H5Oopen(file.get(), spec.column.c_str(), lapl.get()), H5Oclose);
  refuse_external();
  if (!dset.ok() || H5Iget_type(dset.get()) != H5I_DATASET) fail(spec.file, "'" + spec.column + "' is not a dataset");
  io::Hdf5Handle space(H5Dget_space(dset.get()), H5Sclose);
  const int nd = H5Sget_simple_extent_ndims(space.get());
  if (nd < 1 || nd > 2) fail(where, "expected N or N x m values (found " + std::to_string(nd) + " dimensions)");
  hsize_t dims[2] = {0, 1};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  const hsize_t n = dims[0], m = nd == 2 ? dims[1] : 1;
  io::Hdf5Handle type(H5Dget_type(dset.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  std::string name = spec.column;
  if (auto slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
  if (cls == H5T_STRING) {
    if (nd != 1) fail(where, "expected N strings (found a " + std::to_string(nd) + "-D array)");
    return {categorical_from_text(name, where, read_hdf5_strings(dset.get(), type.get(), n, where))};
  }
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) fail(where, "holds neither numbers nor strings");
  std::vector<double> v(static_cast<size_t>(n * m));
  if (H5Dread(dset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0)
    fail(where, "cannot read the values");
  if (m == 1) return {numeric_column(name, where, std::move(v), false)};
  std::vector<MetadataColumn> out;
  for (hsize_t c = 0; c < m; ++c) {
    std::vector<double> col(static_cast<size_t>(n));
    for (hsize_t i = 0; i < n; ++i) col[static_cast<size_t>(i)] = v[static_cast<size_t>(i * m + c)];
    out.push_back(numeric_column(name + "_" + std::to_string(c), where, std::move(col), false));
  }
  return out;
}

// A group's 1-D and 2-D datasets by hard link (a soft or external link may
// lead anywhere, another file included).
herr_t collect_dataset(hid_t group, const char* name, const H5L_info_t* info, void* out) {
  if (info->type != H5L_TYPE_HARD) return 0;
  io::Hdf5Handle object(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
  if (!object.ok() || H5Iget_type(object.get()) != H5I_DATASET) return 0;
  io::Hdf5Handle space(H5Dget_space(object.get()), H5Sclose);
  const int nd = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (nd == 1 || nd == 2) static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

// ---- IDX labels ------------------------------------------------------------------------------

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

bool is_idx_labels(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  return name.find("idx1-ubyte") != std::string::npos || ends_with(name, ".idx1") || ends_with(name, ".idx1.gz");
}

/// Fashion-MNIST's label file: one under a folder whose name says
/// "fashion" (Debian's /usr/share/datasets/fashion-mnist, the project's
/// data/fashion), where a user often cannot add a class list.
bool is_fashion_mnist(const std::string& labels_file) {
  for (const auto& part : fs::path(labels_file).parent_path())
    if (lower(part.string()).find("fashion") != std::string::npos) return true;
  return false;
}

/// Fashion-MNIST's ten classes, in the order of their codes (the
/// dataset's own documentation).
const std::vector<std::string>& fashion_mnist_classes() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

}  // namespace

MetadataColumn read_idx_labels(const std::string& path, const std::string& class_names) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{f};
  unsigned char head[8];
  if (gzread(f, head, 8) != 8) fail(path, "truncated IDX header");
  if (be32(head) != 0x00000801u) fail(path, "not an IDX label file (expected unsigned bytes in 1 dimension)");
  const uint32_t n = be32(head + 4);
  std::vector<unsigned char> raw(n);
  size_t done = 0;
  while (done < n) {
    const int got = gzread(f, raw.data() + done, static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30)));
    if (got <= 0)
      fail(path, "truncated: header announces " + std::to_string(n) + " labels, found " + std::to_string(done));
    done += static_cast<size_t>(got);
  }
  std::vector<double> v(raw.begin(), raw.end());
  std::vector<std::string> names;
  if (!class_names.empty()) names = read_lines(class_names);
  else if (is_fashion_mnist(path) && std::all_of(raw.begin(), raw.end(), [](unsigned char c) { return c < 10; }))
    names = fashion_mnist_classes();
  return categorical_from_integers("label", path, v, names);
}

std::vector<std::string> hdf5_datasets_in(const std::string& path, const std::string& group) {
  const io::Hdf5Reading reading(path);
  std::vector<std::string> names;
  io::Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok() || H5Lexists(file.get(), "/entry_1", H5P_DEFAULT) <= 0 ||
      H5Lexists(file.get(), group.c_str(), H5P_DEFAULT) <= 0)
    return names;
  io::Hdf5Handle g(H5Gopen2(file.get(), group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.ok()) return names;
  H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_dataset, &names);
  for (auto& n : names) n = group + "/" + n;
  return names;
}

namespace {

/// True for a 1-D or 2-D dataset of `rows` rows.
bool is_column_of_length(hid_t object, hsize_t rows) {
  if (H5Iget_type(object) != H5I_DATASET) return false;
  io::Hdf5Handle space(H5Dget_space(object), H5Sclose);
  const int nd = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (nd != 1 && nd != 2) return false;
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  return dims[0] == rows;
}

}  // namespace

std::vector<std::string> hdf5_datasets_of_length(const std::string& path, int64_t rows) {
  const io::Hdf5Reading reading(path);
  io::Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) fail(path, "cannot open as HDF5");
  std::vector<std::string> found;
  io::walk_hdf5(file.get(), [&](const std::string& name, hid_t object) {
    if (is_column_of_length(object, static_cast<hsize_t>(rows))) found.push_back(name);
    return true;
  });
  return found;
}

std::vector<MetadataColumn> load_metadata_file(const MetadataSpec& spec) {
  const std::string name = lower(fs::path(spec.file).filename().string());
  if (ends_with(name, ".npy")) return load_npy(spec);
  if (ends_with(name, ".csv")) return load_delimited(spec, ',');
  if (ends_with(name, ".tsv") || ends_with(name, ".tab")) return load_delimited(spec, '\t');
  if (ends_with(name, ".cxi") || ends_with(name, ".h5") || ends_with(name, ".hdf5") || ends_with(name, ".hdf"))
    return load_hdf5(spec);
  if (is_idx_labels(spec.file)) {
    MetadataColumn c = read_idx_labels(spec.file, class_names_beside(spec.file));
    if (!spec.column.empty()) c.name = spec.column;
    return {c};
  }
  fail(spec.file,
       "unrecognised metadata format (expected .npy, .csv, .tsv, .cxi/.h5:/DATASET or *-labels-idx1-ubyte[.gz])");
}

}  // namespace manifold
