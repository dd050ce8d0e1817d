// Writers and reader of the embedding directory (see embedding_io.h).
#include "manifold/embedding_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <random>

#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/parallel.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

/// A FILE* written to a new temporary file beside `path` and renamed onto
/// it by close(); removed when destroyed unclosed, so a failed write leaves
/// nothing behind. The temporary name is unpredictable and the file is
/// created with O_EXCL | O_NOFOLLOW (the rule of output.h's
/// write_file_atomically): a file or symlink planted beside an export is
/// never followed or truncated.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)) {
    static std::atomic<uint64_t> counter{0};
    std::random_device device;
    const fs::path p(path_);
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
      char suffix[32];
      std::snprintf(suffix, sizeof suffix, "%08x%04x", static_cast<unsigned>(device()),
                    static_cast<unsigned>(counter++ & 0xffff));
      tmp_ = (p.parent_path() / ("." + p.filename().string() + ".tmp-" + suffix)).string();
      fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
      if (fd < 0 && errno != EEXIST)
        throw Error(output_display_path(path_) + ": cannot open for writing (" + std::strerror(errno) + ")");
    }
    if (fd < 0) throw Error(output_display_path(path_) + ": cannot find a free temporary name beside it");
    f_ = ::fdopen(fd, "wb");
    if (!f_) {
      ::close(fd);
      ::unlink(tmp_.c_str());
      throw Error(output_display_path(path_) + ": cannot open for writing (" + std::strerror(errno) + ")");
    }
    buffer_.resize(1 << 20);
    std::setvbuf(f_, buffer_.data(), _IOFBF, buffer_.size());
  }
  ~AtomicFile() {
    if (f_) {
      std::fclose(f_);
      ::unlink(tmp_.c_str());
    }
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  std::FILE* get() { return f_; }
  void close() {
    const bool ok = !std::ferror(f_);
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!ok || !closed) {
      ::unlink(tmp_.c_str());
      throw Error(output_display_path(path_) + ": write failed (disk full?)");
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      ::unlink(tmp_.c_str());
      throw Error(output_display_path(path_) + ": cannot rename temporary file into place");
    }
  }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  std::vector<char> buffer_;
};

/// `s` fit for an XML attribute value.
std::string xml_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      case '\r': out += "&#13;"; break;
      default: out += c;
    }
  }
  return out;
}

/// Writes `chunks` pieces of text in order, each made by format(chunk, text)
/// into an empty string. Rounds of a few chunks per thread are formatted in
/// parallel while the previous round is written, so the file goes out in
/// large pieces and is never held whole in memory.
template <class Format>
void write_in_parallel(std::FILE* f, int64_t chunks, Format&& format) {
  const int64_t round = 4 * static_cast<int64_t>(hardware_threads());
  std::vector<std::string> buffers[2];
  std::future<void> writing;  // declared after the buffers: waited for before they go
  for (int64_t first = 0, r = 0; first < chunks; first += round, ++r) {
    std::vector<std::string>& text = buffers[r % 2];
    text.resize(static_cast<size_t>(std::min(round, chunks - first)));
    parallel_for(
        0, static_cast<int64_t>(text.size()), 0,
        [&](int64_t i) {
      text[static_cast<size_t>(i)].clear();
      format(first + i, text[static_cast<size_t>(i)]);
        },
        1);
    if (writing.valid()) writing.get();
    writing = std::async(std::launch::async, [f, &text] {
      for (const std::string& t : text) std::fwrite(t.data(), 1, t.size(), f);
    });
  }
  if (writing.valid()) writing.get();
}

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends the base64 of `n` bytes to `out` ('=' padded).
void base64(const void* data, size_t n, std::string& out) {
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t at = out.size();
  out.resize(at + (n + 2) / 3 * 4);
  char* o = out.data() + at;
  size_t i = 0;
  for (; i + 3 <= n; i += 3, o += 4) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    o[0] = kB64[(v >> 18) & 63], o[1] = kB64[(v >> 12) & 63], o[2] = kB64[(v >> 6) & 63], o[3] = kB64[v & 63];
  }
  if (i < n) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0u);
    o[0] = kB64[(v >> 18) & 63], o[1] = kB64[(v >> 12) & 63];
    o[2] = i + 1 < n ? kB64[(v >> 6) & 63] : '=';
    o[3] = '=';
  }
}

/// Values per chunk of an encoded array: a multiple of 3, so every chunk but
/// the last is whole base64 quadruples and the chunks' texts joined are the
/// base64 of the whole array.
constexpr int64_t kValuesPerChunk = 3 << 15;

/// VTK's inline binary: a UInt64 byte count, then the raw little-endian
/// values, each base64-encoded on its own (the count is padded separately,
/// which every VTK reader accepts). fill(first, count, out) gives values
/// [first, first + count) of the `values`; they are gathered and encoded
/// chunk by chunk in parallel.
template <class T, class Fill>
void vtk_binary(std::FILE* f, int64_t values, Fill&& fill) {
  const uint64_t bytes = static_cast<uint64_t>(values) * sizeof(T);
  std::string count;
  base64(&bytes, sizeof bytes, count);
  std::fwrite(count.data(), 1, count.size(), f);
  write_in_parallel(f, (values + kValuesPerChunk - 1) / kValuesPerChunk, [&](int64_t chunk, std::string& text) {
    const int64_t first = chunk * kValuesPerChunk, size = std::min(kValuesPerChunk, values - first);
    std::vector<T> raw(static_cast<size_t>(size));
    fill(first, size, raw.data());
    base64(raw.data(), raw.size() * sizeof(T), text);
  });
}

/// A point-data DataArray of `values` values of T (see vtk_binary for `fill`).
template <class T, class Fill>
void data_array(std::FILE* f, const char* type, const std::string& name, int components, int64_t values, Fill&& fill) {
  const std::string n = xml_escaped(name);
  std::fprintf(f, "        <DataArray type=\"%s\"%s%s%s NumberOfComponents=\"%d\" format=\"binary\">\n          ", type,
               n.empty() ? "" : " Name=\"", n.c_str(), n.empty() ? "" : "\"", components);
  vtk_binary<T>(f, values, fill);
  std::fputs("\n        </DataArray>\n", f);
}

/// VTK's String array of `count` strings, string(i) the i-th: the strings
/// one after another, each ended by a NUL (the tag VTK's own writer gives a
/// vtkStringArray, in field data and in point data alike).
template <class String>
void string_array(std::FILE* f, const std::string& name, int64_t count, String&& string) {
  std::string bytes;
  for (int64_t i = 0; i < count; ++i) {
    const std::string& s = string(i);
    bytes.append(s.c_str(), std::strlen(s.c_str())).push_back('\0');
  }
  std::fprintf(f,
               "        <Array type=\"String\" Name=\"%s\" NumberOfTuples=\"%lld\" NumberOfComponents=\"1\" "
               "format=\"binary\">\n          ",
               xml_escaped(name).c_str(), static_cast<long long>(count));
  vtk_binary<char>(f, static_cast<int64_t>(bytes.size()), [&](int64_t first, int64_t count, char* out) {
    std::memcpy(out, bytes.data() + first, static_cast<size_t>(count));
  });
  std::fputs("\n        </Array>\n", f);
}

/// The metadata columns as point data, rows index[i]; category names as field data.
void metadata_arrays(std::FILE* f, int64_t n, const int64_t* index, const MetadataTable& metadata) {
  for (const MetadataColumn& c : metadata.columns()) {
    if (c.kind == MetadataKind::Categorical)
      data_array<int32_t>(f, "Int32", c.name, 1, n, [&](int64_t first, int64_t count, int32_t* out) {
        for (int64_t i = 0; i < count; ++i) out[i] = c.codes[static_cast<size_t>(index[first + i])];
      });
    else
      data_array<double>(f, "Float64", c.name, 1, n, [&](int64_t first, int64_t count, double* out) {
        for (int64_t i = 0; i < count; ++i) out[i] = c.values[static_cast<size_t>(index[first + i])];
      });
  }
}

/// RFC 4180: a field holding the separator, a quote, a line break or outer
/// spaces is quoted, its quotes doubled.
std::string csv_field(const std::string& s) {
  const bool quote = s.find_first_of(",\"\r\n") != std::string::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' ' || s.front() == '\t' || s.back() == '\t'));
  if (!quote) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

/// The table with columns named like a coordinate or "index" renamed
/// NAME_2 (NAME_3, ...), so every column of the files has its own name.
MetadataTable without_clashes(const MetadataTable& metadata, const std::vector<std::string>& reserved) {
  MetadataTable out(metadata.rows());
  auto taken = [&](const std::string& name) {
    return std::find(reserved.begin(), reserved.end(), name) != reserved.end() || out.find(name) || metadata.find(name);
  };
  for (MetadataColumn c : metadata.columns()) {
    if (std::find(reserved.begin(), reserved.end(), c.name) != reserved.end()) {
      int suffix = 2;
      while (taken(c.name + "_" + std::to_string(suffix))) ++suffix;
      c.name += "_" + std::to_string(suffix);
    }
    out.add(std::move(c));
  }
  return out;
}

/// The metadata as the files name its columns (without_clashes against the
/// coordinates, "index" and, with item names, "file"; in `storage`), or null
/// for none. Every writer applies it: two arrays of one name in a .vtp made
/// VTK's reader crash on the arrays after them.
const MetadataTable* columns_for_files(const MetadataTable* metadata, const std::vector<std::string>& names,
                                       bool item_names, MetadataTable& storage) {
  if (!metadata || metadata->empty()) return nullptr;
  std::vector<std::string> reserved = names;
  reserved.push_back("index");
  if (item_names) reserved.push_back("file");
  storage = without_clashes(*metadata, reserved);
  return &storage;
}

/// Checks that the table's rows cover every index before anything is written.
void check_metadata_rows(const MetadataTable* metadata, int64_t n, const int64_t* index) {
  if (!metadata || metadata->empty()) return;
  for (int64_t i = 0; i < n; ++i)
    if (index[i] < 0 || index[i] >= metadata->rows())
      throw Error("metadata: point index " + std::to_string(index[i]) + " is beyond its " +
                  std::to_string(metadata->rows()) + " rows");
}

/// The same for the item names: one per input row.
void check_item_names(const std::vector<std::string>* item_names, int64_t n, const int64_t* index) {
  if (!item_names || item_names->empty()) return;
  const int64_t rows = static_cast<int64_t>(item_names->size());
  for (int64_t i = 0; i < n; ++i)
    if (index[i] < 0 || index[i] >= rows)
      throw Error("item names: point index " + std::to_string(index[i]) + " is beyond its " + std::to_string(rows) +
                  " names");
}

/// A null or empty list of names: none (no file column, no array).
const std::vector<std::string>* names_or_null(const std::vector<std::string>* item_names) {
  return item_names && !item_names->empty() ? item_names : nullptr;
}

/// What every writer writes beside the coordinates: the item names (null
/// for none) and the metadata as the files name its columns
/// (columns_for_files), both checked against the points' indices before
/// anything is written.
struct FileColumns {
  FileColumns(const MetadataTable* table, const std::vector<std::string>* names_of_items,
              const std::vector<std::string>& coordinate_names, int64_t n, const int64_t* index)
      : item_names(names_or_null(names_of_items)),
        metadata(columns_for_files(table, coordinate_names, item_names != nullptr, renamed)) {
    check_metadata_rows(metadata, n, index);
    check_item_names(item_names, n, index);
  }
  FileColumns(const FileColumns&) = delete;
  FileColumns& operator=(const FileColumns&) = delete;

  MetadataTable renamed;  ///< metadata's storage (before it: initialised first)
  const std::vector<std::string>* item_names;
  const MetadataTable* metadata;
};

std::string join(const fs::path& dir, const char* name) { return (dir / name).string(); }

}  // namespace

std::vector<std::string> coordinate_names(int m) {
  std::vector<std::string> names;
  for (int c = 1; c <= m; ++c) names.push_back("dc" + std::to_string(c));
  return names;
}

void write_vtp(const std::string& path, int64_t n, int m, const double* x, const int64_t* index,
               const std::vector<std::string>& names, const MetadataTable* metadata,
               const std::vector<std::string>* item_names) {
  const FileColumns beside(metadata, item_names, names, n, index);
  metadata = beside.metadata, item_names = beside.item_names;
  AtomicFile out(path);
  std::FILE* f = out.get();
  std::fputs("<?xml version=\"1.0\"?>\n", f);
  std::fputs("<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n", f);
  std::fputs("  <PolyData>\n", f);
  if (metadata && !metadata->empty()) {
    bool any = false;
    for (const MetadataColumn& c : metadata->columns()) any = any || c.kind == MetadataKind::Categorical;
    if (any) {
      std::fputs("    <FieldData>\n", f);
      for (const MetadataColumn& c : metadata->columns())
        if (c.kind == MetadataKind::Categorical)
          string_array(f, c.name + "_categories", static_cast<int64_t>(c.categories.size()),
                       [&](int64_t i) -> const std::string& { return c.categories[static_cast<size_t>(i)]; });
      std::fputs("    </FieldData>\n", f);
    }
  }
  std::fprintf(f,
               "    <Piece NumberOfPoints=\"%lld\" NumberOfVerts=\"%lld\" NumberOfLines=\"0\" NumberOfStrips=\"0\" "
               "NumberOfPolys=\"0\">\n",
               static_cast<long long>(n), static_cast<long long>(n));
  std::fprintf(f, "      <PointData Scalars=\"%s\">\n", m > 0 ? xml_escaped(names[0]).c_str() : "index");
  for (int c = 0; c < m; ++c)
    data_array<double>(f, "Float64", names[static_cast<size_t>(c)], 1, n, [&](int64_t first, int64_t count, double* v) {
      for (int64_t i = 0; i < count; ++i) v[i] = x[(first + i) * m + c];
    });
  data_array<int64_t>(f, "Int64", "index", 1, n, [&](int64_t first, int64_t count, int64_t* v) {
    std::memcpy(v, index + first, static_cast<size_t>(count) * sizeof *v);
  });
  if (metadata) metadata_arrays(f, n, index, *metadata);
  if (item_names)
    string_array(f, "file", n,
                 [&](int64_t i) -> const std::string& { return (*item_names)[static_cast<size_t>(index[i])]; });
  std::fputs("      </PointData>\n      <Points>\n", f);
  // (dc1, dc2, dc3), 0 for the axes an embedding of fewer coordinates lacks.
  data_array<double>(f, "Float64", "Points", 3, 3 * n, [&](int64_t first, int64_t count, double* v) {
    for (int64_t j = first; j < first + count; ++j) v[j - first] = j % 3 < m ? x[j / 3 * m + j % 3] : 0.0;
  });
  std::fputs("      </Points>\n      <Verts>\n", f);
  data_array<int64_t>(f, "Int64", "connectivity", 1, n, [](int64_t first, int64_t count, int64_t* v) {
    for (int64_t i = 0; i < count; ++i) v[i] = first + i;
  });
  data_array<int64_t>(f, "Int64", "offsets", 1, n, [](int64_t first, int64_t count, int64_t* v) {
    for (int64_t i = 0; i < count; ++i) v[i] = first + i + 1;
  });
  std::fputs("      </Verts>\n    </Piece>\n  </PolyData>\n</VTKFile>\n", f);
  out.close();
}

void write_csv(const std::string& path, int64_t n, int m, const double* x, const int64_t* index,
               const std::vector<std::string>& names, const MetadataTable* metadata,
               const std::vector<std::string>* item_names) {
  const FileColumns beside(metadata, item_names, names, n, index);
  metadata = beside.metadata, item_names = beside.item_names;
  static const MetadataTable kNone;
  const auto& columns = (metadata ? *metadata : kNone).columns();
  // Each category's field once, quoted as it needs.
  std::vector<std::vector<std::string>> category_fields;
  for (const MetadataColumn& c : columns) {
    category_fields.emplace_back();
    if (c.kind == MetadataKind::Categorical)
      for (const std::string& name : c.categories) category_fields.back().push_back(csv_field(name));
  }
  AtomicFile out(path);
  std::FILE* f = out.get();
  std::string header = "index";
  for (int c = 0; c < m; ++c) header += "," + names[static_cast<size_t>(c)];
  for (const MetadataColumn& c : columns) header += "," + csv_field(c.name);
  // The names go last: the column most likely to hold commas, so a reader
  // that splits every line on commas (numpy.genfromtxt, which knows no
  // quotes) still finds every other column in its place.
  std::vector<std::string> name_fields;
  if (item_names) {
    header += ",file";
    name_fields.reserve(item_names->size());
    for (const std::string& name : *item_names) name_fields.push_back(csv_field(name));
  }
  header += '\n';
  std::fputs(header.c_str(), f);
  // The longest a row can be: an int64, m doubles and the metadata fields,
  // each after a comma, then a newline (shortest round-trip doubles take at
  // most 24 characters).
  constexpr size_t kNumber = 24;
  size_t row_bound = 21 + static_cast<size_t>(m) * (kNumber + 1) + 1;
  for (const auto& fields : category_fields) {
    size_t longest = kNumber;
    for (const std::string& field : fields) longest = std::max(longest, field.size());
    row_bound += longest + 1;
  }
  size_t longest_name = 0;
  for (const std::string& field : name_fields) longest_name = std::max(longest_name, field.size());
  if (item_names) row_bound += longest_name + 1;
  // Rows in chunks of about a megabyte of text, formatted in parallel.
  const int64_t rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>((size_t{1} << 20) / row_bound));
  write_in_parallel(f, (n + rows_per_chunk - 1) / rows_per_chunk, [&](int64_t chunk, std::string& text) {
    const int64_t first = chunk * rows_per_chunk, last = std::min(n, first + rows_per_chunk);
    text.resize(static_cast<size_t>(last - first) * row_bound);
    char* p = text.data();
    for (int64_t i = first; i < last; ++i) {
      p = std::to_chars(p, p + kNumber, index[i]).ptr;
      for (int c = 0; c < m; ++c) {
        *p++ = ',';
        p = std::to_chars(p, p + kNumber, x[i * m + c]).ptr;
      }
      const size_t row = static_cast<size_t>(index[i]);
      for (size_t k = 0; k < columns.size(); ++k) {
        const MetadataColumn& c = columns[k];
        *p++ = ',';
        if (c.kind == MetadataKind::Categorical) {
          if (c.codes[row] >= 0) {
            const std::string& field = category_fields[k][static_cast<size_t>(c.codes[row])];
            p = std::copy(field.begin(), field.end(), p);
          }
        } else if (!std::isnan(c.values[row])) {
          p = std::to_chars(p, p + kNumber, c.values[row]).ptr;
        }
      }
      if (item_names) {
        *p++ = ',';
        p = std::copy(name_fields[row].begin(), name_fields[row].end(), p);
      }
      *p++ = '\n';
    }
    text.resize(static_cast<size_t>(p - text.data()));
  });
  out.close();
}

nlohmann::json embedding_metadata(const DiffusionResult& r, const DiffusionParams& p, const nlohmann::json& graph) {
  nlohmann::json j;
  j["format"] = "manifold-embedding";
  j["version"] = 1;
  j["parameters"] = {{"k", r.k},
                     {"epsilon", p.epsilon},
                     {"alpha", p.alpha},
                     {"components", p.components},
                     {"t", p.t},
                     {"symmetrize", p.symmetrize},
                     {"local_scaling", local_scaling_json(p.local_scaling)},
                     {"tolerance", p.tolerance},
                     {"max_matvecs", p.max_matvecs},
                     {"time_limit_s", p.time_limit_s},
                     {"ncv", p.ncv},
                     {"lock_check", p.lock_check},
                     {"eigensolver", p.eigensolver}};
  j["epsilon"] = r.epsilon;
  j["epsilon_rule"] = epsilon_rule(p);
  j["graph_points"] = r.graph_points;
  j["points_embedded"] = r.n;
  j["graph_components"] = r.graph_components;
  j["kernel_components"] = r.kernel_components;
  j["weakly_joined_points"] = r.weakly_joined_points;
  j["largest_graph_components"] = r.largest_graph_components;
  j["identical_image_components"] = r.identical_components;
  j["identical_image_points"] = r.identical_component_points;
  j["duplicate_scaled_points"] = r.duplicate_scaled_points;
  j["metric"] = to_string(r.metric);
  j["kernel_distance2"] = r.metric == Metric::Euclidean ? "d^2" : "2 d (squared distance of the unit-norm rows)";
  j["local_scaling_neighbour"] = r.local_scaling;
  j["diagnostics"] = r.diagnostics.to_json();
  j["coordinates"] = coordinate_names(r.m);
  j["eigenvalues"] = r.eigenvalues;
  j["solver"] = r.solver;
  nlohmann::json t = nlohmann::json::object();
  for (auto& [stage, seconds] : r.timings) t[stage] = seconds;
  j["timings_s"] = t;
  if (!r.bgh.is_null()) j["bgh"] = r.bgh;
  if (!graph.is_null()) j["graph"] = graph;
  return j;
}

std::vector<MetadataCorrelation> metadata_correlations(const DiffusionResult& r, const MetadataTable& metadata) {
  const int nev = r.m + 1;
  if (r.psi.size() != static_cast<size_t>(r.n * nev))
    return correlate_metadata(metadata, r.coordinates.data(), r.n, r.m, r.point_index.data());
  std::vector<double> psi(static_cast<size_t>(r.n * r.m));
  for (int64_t i = 0; i < r.n; ++i)
    for (int c = 0; c < r.m; ++c) psi[static_cast<size_t>(i * r.m + c)] = r.psi[static_cast<size_t>(i * nev + c + 1)];
  return correlate_metadata(metadata, psi.data(), r.n, r.m, r.point_index.data());
}

void write_embedding_files(OutputTransaction& tx, const DiffusionResult& r, const DiffusionParams& p,
                           const nlohmann::json& graph, const nlohmann::json& extra, const MetadataTable* metadata,
                           const std::vector<std::string>* item_names, Timings* steps) {
  if (r.coordinates.size() != static_cast<size_t>(r.n * r.m) || r.point_index.size() != static_cast<size_t>(r.n))
    throw Error("embedding: result arrays do not match " + std::to_string(r.n) + " x " + std::to_string(r.m));
  const auto names = coordinate_names(r.m);
  // Renamed here too, so that embedding.json's correlations name the
  // columns as the files do.
  const FileColumns beside(metadata, item_names, names, r.n, r.point_index.data());
  metadata = beside.metadata, item_names = beside.item_names;
  Timings written;
  auto timed = [&](const char* step, auto&& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    written.emplace_back(step, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  // Every file at once, each straight from the result's arrays (the paths
  // are taken here: the transaction is not shared between threads).
  ParallelWrites writes;
  const std::string eigenvalues = tx.path("eigenvalues.npy"), embedding = tx.path("embedding.npy"),
                    point_index = tx.path("point_index.npy"), csv = tx.path("embedding.csv"),
                    vtp = tx.path("embedding.vtp");
  writes.start("write embedding .npy", "eigenvalues.npy",
               [&] { npy::write(eigenvalues, r.eigenvalues.data(), {static_cast<int64_t>(r.eigenvalues.size())}); });
  writes.start("write embedding .npy", "embedding.npy", [&] {
    npy::write(embedding, r.coordinates.data(), {r.n, r.m});
  });
  writes.start("write embedding .npy", "point_index.npy",
               [&] { npy::write(point_index, r.point_index.data(), {r.n}); });
  writes.start("write CSV", "embedding.csv", [&] {
    write_csv(csv, r.n, r.m, r.coordinates.data(), r.point_index.data(), names, metadata, item_names);
  });
  writes.start("write VTP", "embedding.vtp", [&] {
    write_vtp(vtp, r.n, r.m, r.coordinates.data(), r.point_index.data(), names, metadata, item_names);
  });
  nlohmann::json j = embedding_metadata(r, p, graph);
  if (extra.is_object()) j.update(extra);
  if (metadata)
    timed("metadata correlation",
          [&] { j["metadata_correlation"] = correlation_json(*metadata, metadata_correlations(r, *metadata)); });
  const ParallelWrites::Seconds seconds = writes.wait();
  written.insert(written.end(), seconds.steps.begin(), seconds.steps.end());
  // The command's steps so far (extra's, then these) and each file's own
  // time (extra's files, then these); the commit comes after.
  nlohmann::json& command = j["command_timings_s"];
  if (!command.is_object()) command = nlohmann::json::object();
  for (const auto& [step, s] : written) command[step] = s;
  nlohmann::json& files = j["output_files_s"];
  if (!files.is_object()) files = nlohmann::json::object();
  for (const auto& [file, s] : seconds.files) files[file] = s;
  timed("write embedding.json", [&] { write_text_file(tx.path("embedding.json"), j.dump(2) + "\n"); });
  if (steps) steps->insert(steps->end(), written.begin(), written.end());
}

void write_embedding(const std::string& dir, const DiffusionResult& r, const DiffusionParams& p,
                     const nlohmann::json& graph, const nlohmann::json& extra, const MetadataTable* metadata,
                     const std::vector<std::string>* item_names, Timings* steps) {
  OutputTransaction tx(dir);
  write_embedding_files(tx, r, p, graph, extra, metadata, item_names, steps);
  const auto start = std::chrono::steady_clock::now();
  tx.commit();
  if (steps)
    steps->emplace_back("commit", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

Embedding read_embedding(const std::string& dir) {
  const fs::path d(dir);
  if (!fs::is_directory(d)) throw Error(dir + ": not an embedding directory (missing)");
  const std::string epath = join(d, "embedding.npy"), lpath = join(d, "eigenvalues.npy"),
                    ipath = join(d, "point_index.npy"), jpath = join(d, "embedding.json");
  for (auto& p : {epath, lpath, ipath, jpath})
    if (!fs::exists(p)) throw Error(p + ": missing (not a directory written by manifold embed?)");
  Embedding e;
  try {
    std::ifstream in(jpath);
    e.metadata = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    throw Error(jpath + ": not valid JSON");
  }
  if (e.metadata.value("format", std::string()) != "manifold-embedding")
    throw Error(jpath + ": not a manifold embedding description (format field)");
  std::vector<int64_t> es, ls, is;
  e.coordinates = npy::read<double>(epath, &es);
  e.eigenvalues = npy::read<double>(lpath, &ls);
  e.point_index = npy::read<int64_t>(ipath, &is);
  if (es.size() != 2) throw Error(epath + ": expected an N x M array");
  e.n = es[0];
  e.m = static_cast<int>(es[1]);
  if (ls.size() != 1 || ls[0] != e.m + 1)
    throw Error(lpath + ": expected " + std::to_string(e.m + 1) + " eigenvalues for " + std::to_string(e.m) +
                " coordinates");
  if (is.size() != 1 || is[0] != e.n)
    throw Error(ipath + ": expected " + std::to_string(e.n) + " indices, one per embedded point");
  const int64_t graph_points = e.metadata.value("graph_points", int64_t{-1});
  for (int64_t i = 0; i < e.n; ++i)
    if (e.point_index[static_cast<size_t>(i)] < 0 ||
        (graph_points >= 0 && e.point_index[static_cast<size_t>(i)] >= graph_points))
      throw Error(ipath + ": index " + std::to_string(e.point_index[static_cast<size_t>(i)]) + " at row " +
                  std::to_string(i) + " is out of range");
  if (e.metadata.value("points_embedded", e.n) != e.n)
    throw Error(jpath + ": points_embedded disagrees with embedding.npy");
  return e;
}

}  // namespace manifold
