// MetadataTable, FILE[:COLUMN] specs, discovery beside a dataset and the
// loading of explicit and discovered files into one table (metadata.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "manifold/error.h"
#include "manifold/metadata.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace

std::string to_string(MetadataKind kind) {
  switch (kind) {
    case MetadataKind::Numeric: return "numeric";
    case MetadataKind::Categorical: return "categorical";
    case MetadataKind::Angle: return "angle";
  }
  return "numeric";
}

int64_t MetadataColumn::rows() const {
  return static_cast<int64_t>(kind == MetadataKind::Categorical ? codes.size() : values.size());
}

double MetadataColumn::radians(int64_t i) const {
  const double v = values[static_cast<size_t>(i)];
  return unit == AngleUnit::Degrees ? v * (M_PI / 180.0) : v;
}

std::string MetadataColumn::text(int64_t i) const {
  if (kind == MetadataKind::Categorical) {
    const int32_t c = codes[static_cast<size_t>(i)];
    return c < 0 ? std::string() : categories[static_cast<size_t>(c)];
  }
  const double v = values[static_cast<size_t>(i)];
  if (std::isnan(v)) return {};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const MetadataColumn* MetadataTable::find(const std::string& name) const {
  for (const auto& c : columns_)
    if (c.name == name) return &c;
  return nullptr;
}

void MetadataTable::add(MetadataColumn column) {
  if (column.rows() != rows_)
    throw Error(column.source + ": " + std::to_string(column.rows()) + " values but the dataset has " +
                std::to_string(rows_) + " rows");
  if (column.name.empty()) column.name = "metadata";
  if (find(column.name)) {
    int suffix = 2;
    while (find(column.name + "_" + std::to_string(suffix))) ++suffix;
    column.name += "_" + std::to_string(suffix);
  }
  columns_.push_back(std::move(column));
}

MetadataSpec parse_metadata_spec(const std::string& text) {
  if (text.empty()) throw UsageError("--metadata: empty value (FILE[:COLUMN])");
  if (is_file(text)) return {text, {}};
  // The longest existing prefix before a ':' is the file: paths may hold ':'
  // and an HDF5 dataset path after it holds '/'.
  for (size_t pos = text.rfind(':'); pos != std::string::npos && pos > 0; pos = text.rfind(':', pos - 1)) {
    const std::string file = text.substr(0, pos);
    if (is_file(file)) return {file, text.substr(pos + 1)};
  }
  const size_t colon = text.find(':');
  const std::string file = colon == std::string::npos ? text : text.substr(0, colon);
  throw Error(file + ": cannot open metadata file (no such file)");
}

std::string class_names_beside(const std::string& label_file) {
  const fs::path p(label_file);
  std::string stem = p.filename().string();
  for (const char* ext : {".gz", ".npy"})
    if (ends_with(stem, ext)) stem.resize(stem.size() - std::string(ext).size());
  for (const fs::path& candidate : {p.parent_path() / (stem + ".classes.txt"), p.parent_path() / "classes.txt"})
    if (is_file(candidate.string())) return candidate.string();
  return {};
}

std::vector<MetadataSpec> discover_metadata(const std::string& data_path) {
  std::vector<MetadataSpec> found;
  const fs::path p(data_path);
  const std::string name = p.filename().string();
  if (ends_with(name, ".npy")) {
    const std::string stem = name.substr(0, name.size() - 4);
    for (const char* suffix : {".labels.npy", ".angles.npy", ".quaternions.npy", ".csv"}) {
      const std::string candidate = (p.parent_path() / (stem + suffix)).string();
      if (is_file(candidate)) found.push_back({candidate, {}});
    }
  }
  // CXI keeps the facts about each shot's sample inside the file.
  const std::string lower_name = [&] {
    std::string l = name;
    for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return l;
  }();
  if (ends_with(lower_name, ".cxi") || ends_with(lower_name, ".h5") || ends_with(lower_name, ".hdf5"))
    for (const std::string& dataset : hdf5_datasets_in(data_path, "/entry_1/sample_1"))
      found.push_back({data_path, dataset});
  // MNIST convention: X-images-idx3-ubyte[.gz] beside X-labels-idx1-ubyte[.gz].
  const std::string images = "images-idx3-ubyte", labels = "labels-idx1-ubyte";
  if (auto pos = name.find(images); pos != std::string::npos) {
    std::string other = name;
    other.replace(pos, images.size(), labels);
    const std::string plain = ends_with(other, ".gz") ? other.substr(0, other.size() - 3) : other;
    for (const std::string& candidate : {other, plain, plain + ".gz"}) {
      const std::string path = (p.parent_path() / candidate).string();
      if (is_file(path)) {
        found.push_back({path, {}});
        break;
      }
    }
  }
  return found;
}

MetadataTable load_metadata(const std::vector<std::string>& specs, int64_t rows, const std::string& data_path,
                            std::vector<std::string>* warnings) {
  MetadataTable table(rows);
  // What the user named: a discovered file (or file:dataset) among them is not loaded twice.
  std::vector<std::pair<std::string, std::string>> loaded;
  for (const std::string& text : specs) {
    const MetadataSpec spec = parse_metadata_spec(text);
    for (MetadataColumn& c : load_metadata_file(spec)) table.add(std::move(c));
    loaded.emplace_back(fs::weakly_canonical(spec.file).string(), spec.column);
  }
  if (data_path.empty()) return table;
  for (const MetadataSpec& spec : discover_metadata(data_path)) {
    const std::string file = fs::weakly_canonical(spec.file).string();
    if (std::any_of(loaded.begin(), loaded.end(), [&](const auto& named) {
          return named.first == file && (spec.column.empty() || named.second == spec.column);
        }))
      continue;
    // A file found beside the data is a guess: one that does not fit is
    // reported and left out rather than failing the run.
    try {
      MetadataTable one(rows);
      for (MetadataColumn& c : load_metadata_file(spec)) one.add(std::move(c));
      for (const MetadataColumn& c : one.columns()) table.add(c);
    } catch (const Error& e) {
      if (warnings) warnings->push_back(std::string(e.what()) + " (found beside the data; left out)");
    }
  }
  return table;
}

}  // namespace manifold
