// The embedding's text outputs at sizes where they are formatted in many
// chunks on several threads: the CSV reads back exactly (shortest round-trip
// numbers, rows in order, metadata fields), the VTP's arrays are exactly the
// base64 of the whole arrays (one stream per array, padded only at its end,
// as VTK's reader needs), files written at the same time hold the bytes
// each writer makes alone, and embedding.json records the write steps and
// each file's own time.
// Also the .npy reader's direct and converted paths at more than one chunk,
// and the clock of a command's steps.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/metadata.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/step_clock.h"
#include "test_support.h"

using namespace manifold;
using testing_support::slurp;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

/// Coordinates with every kind of double a solver can give: full 17-digit
/// values, tiny and huge magnitudes, subnormals, zeros of both signs.
std::vector<double> awkward_coordinates(int64_t n, int m) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0, 1e-3);
  std::vector<double> x(static_cast<size_t>(n * m));
  for (auto& v : x) v = g(rng);
  const double specials[] = {0.0,
                             -0.0,
                             1.0,
                             -1.0,
                             1e-300,
                             -1e300,
                             std::numeric_limits<double>::denorm_min(),
                             std::numeric_limits<double>::max(),
                             0.1,
                             1.0 / 3.0,
                             123456789.0,
                             5e-324 * 3};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 37 % x.size()] = specials[i];
  return x;
}

/// Base64 as one stream, '=' only at its end: what VTK's reader decodes.
std::string base64_of(const void* data, size_t n) {
  static const char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0u) |
                       (i + 2 < n ? p[i + 2] : 0u);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < n ? k[(v >> 6) & 63] : '=';
    out += i + 2 < n ? k[v & 63] : '=';
  }
  return out;
}

/// The text of the DataArray named `name` between its start and end tags, without white space.
std::string array_text(const std::string& vtp, const std::string& name) {
  const size_t at = vtp.find("Name=\"" + name + "\"");
  EXPECT_NE(at, std::string::npos) << name;
  if (at == std::string::npos) return {};
  const size_t from = vtp.find('>', at) + 1, to = vtp.find("</", from);
  std::string text;
  for (size_t i = from; i < to; ++i)
    if (!std::isspace(static_cast<unsigned char>(vtp[i]))) text += vtp[i];
  return text;
}

/// What the VTP holds for an array of these values: the UInt64 byte count's
/// base64, then the values' base64 as one stream.
template <class T>
std::string expected_array(const std::vector<T>& values) {
  const uint64_t bytes = values.size() * sizeof(T);
  return base64_of(&bytes, sizeof bytes) + base64_of(values.data(), bytes);
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

MetadataTable table_for(int64_t rows) {
  MetadataTable t(rows);
  MetadataColumn angle;
  angle.name = "angle";
  angle.kind = MetadataKind::Angle;
  MetadataColumn cls;
  cls.name = "class";
  cls.kind = MetadataKind::Categorical;
  cls.categories = {"plain", "with, comma", "with \"quote\""};
  for (int64_t i = 0; i < rows; ++i) {
    angle.values.push_back(i % 11 == 0 ? std::nan("") : 0.001 * static_cast<double>(i));
    cls.codes.push_back(i % 7 == 0 ? -1 : static_cast<int32_t>(i % 3));
  }
  t.add(std::move(angle));
  t.add(std::move(cls));
  return t;
}

}  // namespace

TEST(EmbeddingIoParallel, CsvOfManyChunksReadsBackExactly) {
  // 250,000 rows of 3 coordinates and 2 metadata columns: about 20 chunks of
  // rows, several rounds of them on any number of threads.
  const int64_t n = 250000;
  const int m = 3;
  const auto x = awkward_coordinates(n, m);
  std::vector<int64_t> index(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) index[static_cast<size_t>(i)] = (i * 7919) % n;  // a permutation
  const MetadataTable metadata = table_for(n);
  TempDir t;
  write_csv(t / "e.csv", n, m, x.data(), index.data(), coordinate_names(m), &metadata);

  std::istringstream csv(slurp(t / "e.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "index,dc1,dc2,dc3,angle,class");
  const std::vector<std::string> class_fields = {"plain", "\"with, comma\"", "\"with \"\"quote\"\"\""};
  int64_t row = 0;
  while (std::getline(csv, line)) {
    ASSERT_LT(row, n);
    const int64_t source = index[static_cast<size_t>(row)];
    // The class field may hold a quoted comma: compare the row's end whole.
    const int32_t code = metadata.columns()[1].codes[static_cast<size_t>(source)];
    const std::string class_field = code < 0 ? "" : class_fields[static_cast<size_t>(code)];
    ASSERT_GE(line.size(), class_field.size() + 1);
    ASSERT_EQ(line.substr(line.size() - class_field.size() - 1), "," + class_field) << row;
    const auto cells = split(line.substr(0, line.size() - class_field.size() - 1));
    ASSERT_EQ(cells.size(), static_cast<size_t>(1 + m + 1)) << line;
    ASSERT_EQ(std::stoll(cells[0]), source);
    for (int c = 0; c < m; ++c) {
      const double v = x[static_cast<size_t>(row * m + c)];
      ASSERT_EQ(std::strtod(cells[static_cast<size_t>(1 + c)].c_str(), nullptr), v) << row << "," << c;
      ASSERT_EQ(std::signbit(std::strtod(cells[static_cast<size_t>(1 + c)].c_str(), nullptr)), std::signbit(v));
      // The shortest form that reads back: no longer than std::to_chars's.
      char shortest[32];
      const auto end = std::to_chars(shortest, shortest + sizeof shortest, v).ptr;
      ASSERT_EQ(cells[static_cast<size_t>(1 + c)], std::string(shortest, end));
    }
    const double angle = metadata.columns()[0].values[static_cast<size_t>(source)];
    if (std::isnan(angle)) ASSERT_EQ(cells[1 + m], "");
    else
      ASSERT_EQ(std::strtod(cells[1 + m].c_str(), nullptr), angle);
    ++row;
  }
  EXPECT_EQ(row, n);
}

TEST(EmbeddingIoParallel, VtpArraysAreEachOneBase64Stream) {
  // 200,003 points: the Points array (3 values a point) spans several
  // chunks and ends in a partial base64 quadruple.
  const int64_t n = 200003;
  const int m = 4;
  const auto x = awkward_coordinates(n, m);
  std::vector<int64_t> index(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) index[static_cast<size_t>(i)] = n - 1 - i;
  const MetadataTable metadata = table_for(n);
  TempDir t;
  write_vtp(t / "e.vtp", n, m, x.data(), index.data(), coordinate_names(m), &metadata);
  const std::string vtp = slurp(t / "e.vtp");

  for (int c = 0; c < m; ++c) {
    std::vector<double> column(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) column[static_cast<size_t>(i)] = x[static_cast<size_t>(i * m + c)];
    ASSERT_EQ(array_text(vtp, "dc" + std::to_string(c + 1)), expected_array(column)) << c;
  }
  EXPECT_EQ(array_text(vtp, "index"), expected_array(index));
  std::vector<double> points(static_cast<size_t>(n * 3));
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) points[static_cast<size_t>(i * 3 + c)] = x[static_cast<size_t>(i * m + c)];
  EXPECT_EQ(array_text(vtp, "Points"), expected_array(points));
  std::vector<int64_t> connectivity(static_cast<size_t>(n)), offsets(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) connectivity[static_cast<size_t>(i)] = i, offsets[static_cast<size_t>(i)] = i + 1;
  EXPECT_EQ(array_text(vtp, "connectivity"), expected_array(connectivity));
  EXPECT_EQ(array_text(vtp, "offsets"), expected_array(offsets));
  // Metadata in point order: row index[i] of each column.
  std::vector<double> angle(static_cast<size_t>(n));
  std::vector<int32_t> codes(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    angle[static_cast<size_t>(i)] = metadata.columns()[0].values[static_cast<size_t>(index[static_cast<size_t>(i)])];
    codes[static_cast<size_t>(i)] = metadata.columns()[1].codes[static_cast<size_t>(index[static_cast<size_t>(i)])];
  }
  EXPECT_EQ(array_text(vtp, "angle"), expected_array(angle));
  EXPECT_EQ(array_text(vtp, "class"), expected_array(codes));
  const std::string names = std::string("plain") + '\0' + "with, comma" + '\0' + "with \"quote\"" + '\0';
  EXPECT_EQ(array_text(vtp, "class_categories"), expected_array(std::vector<char>(names.begin(), names.end())));
}

TEST(EmbeddingIoParallel, FewerThanThreeCoordinatesArePaddedWithZeros) {
  const int64_t n = 100001;
  const auto x = awkward_coordinates(n, 1);
  std::vector<int64_t> index(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) index[static_cast<size_t>(i)] = i;
  TempDir t;
  write_vtp(t / "e.vtp", n, 1, x.data(), index.data(), coordinate_names(1));
  std::vector<double> points(static_cast<size_t>(n * 3), 0.0);
  for (int64_t i = 0; i < n; ++i) points[static_cast<size_t>(i * 3)] = x[static_cast<size_t>(i)];
  EXPECT_EQ(array_text(slurp(t / "e.vtp"), "Points"), expected_array(points));
}

TEST(EmbeddingIoParallel, EmbeddingJsonRecordsTheWriteSteps) {
  DiffusionResult r;
  r.n = 1000;
  r.m = 2;
  r.coordinates = awkward_coordinates(r.n, r.m);
  for (int64_t i = 0; i < r.n; ++i) r.point_index.push_back(i);
  r.eigenvalues = {1, 0.9, 0.8};
  const MetadataTable metadata = table_for(r.n);
  TempDir t;
  Timings steps;
  write_embedding(t.path, r, DiffusionParams{}, nullptr,
                  {{"command_timings_s", {{"load", 1.5}}}, {"output_files_s", {{"indices.npy", 0.5}}}}, &metadata,
                  nullptr, &steps);
  std::vector<std::string> names;
  for (const auto& [name, seconds] : steps) {
    names.push_back(name);
    EXPECT_GE(seconds, 0) << name;
  }
  // The correlation is computed while the files are written; then the
  // waits for each file's step in turn.
  EXPECT_EQ(names, (std::vector<std::string>{"metadata correlation", "write embedding .npy", "write CSV", "write VTP",
                                             "write embedding.json", "commit"}));
  std::ifstream in(t / "embedding.json");
  const auto j = nlohmann::json::parse(in);
  const auto& c = j.at("command_timings_s");
  EXPECT_EQ(c.at("load").get<double>(), 1.5);  // the caller's steps kept
  for (const char* step : {"write embedding .npy", "write CSV", "write VTP", "metadata correlation"})
    EXPECT_TRUE(c.contains(step)) << step;
  EXPECT_FALSE(c.contains("write embedding.json"));  // not known while it is written
  EXPECT_FALSE(c.contains("commit"));
  // Each file's own time, the caller's files kept.
  const auto& files = j.at("output_files_s");
  EXPECT_EQ(files.size(), 6u) << files;
  EXPECT_EQ(files.at("indices.npy").get<double>(), 0.5);
  for (const char* file : {"eigenvalues.npy", "embedding.npy", "point_index.npy", "embedding.csv", "embedding.vtp"})
    EXPECT_GE(files.at(file).get<double>(), 0) << file;
}

TEST(EmbeddingIoParallel, FilesWrittenAtOnceHoldTheSameBytesAsAlone) {
  // The CSV and the VTP are formatted on several threads each, at the same
  // time, beside the .npy files: each file as its writer makes it alone.
  DiffusionResult r;
  r.n = 150001;
  r.m = 4;
  r.graph_points = r.n;
  r.coordinates = awkward_coordinates(r.n, r.m);
  for (int64_t i = 0; i < r.n; ++i) r.point_index.push_back((i * 7919) % r.n);
  r.eigenvalues = {1, 0.9, 0.8, 0.7, 0.6};
  const MetadataTable metadata = table_for(r.n);
  TempDir t;
  write_embedding(t / "e", r, DiffusionParams{}, nullptr, nullptr, &metadata);
  const auto names = coordinate_names(r.m);
  write_csv(t / "alone.csv", r.n, r.m, r.coordinates.data(), r.point_index.data(), names, &metadata);
  write_vtp(t / "alone.vtp", r.n, r.m, r.coordinates.data(), r.point_index.data(), names, &metadata);
  npy::write(t / "alone.npy", r.coordinates.data(), {r.n, r.m});
  EXPECT_EQ(slurp(t / "e/embedding.csv"), slurp(t / "alone.csv"));
  EXPECT_EQ(slurp(t / "e/embedding.vtp"), slurp(t / "alone.vtp"));
  EXPECT_EQ(slurp(t / "e/embedding.npy"), slurp(t / "alone.npy"));
  const Embedding back = read_embedding(t / "e");
  EXPECT_EQ(back.coordinates, r.coordinates);
  EXPECT_EQ(back.point_index, r.point_index);
  EXPECT_EQ(back.eigenvalues, r.eigenvalues);
}

TEST(EmbeddingIoParallel, AFailedWriteNamesItsFileAndLeavesNothing) {
  // A metadata table shorter than the indices it is read at: refused
  // before any file is started, naming the problem, the folder not made.
  DiffusionResult r;
  r.n = 100;
  r.m = 2;
  r.coordinates.assign(200, 0.5);
  for (int64_t i = 0; i < r.n; ++i) r.point_index.push_back(i);
  r.eigenvalues = {1, 0.9, 0.8};
  const MetadataTable short_table = table_for(50);
  TempDir t;
  try {
    write_embedding(t / "e", r, DiffusionParams{}, nullptr, nullptr, &short_table);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("beyond its 50 rows"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(t / "e"));
  EXPECT_TRUE(fs::is_empty(t.path));
}

TEST(NpyRead, DirectAndConvertedReadsOfSeveralChunks) {
  // More values than the converter's chunk (2^20), so both paths loop.
  const int64_t n = (int64_t{1} << 20) * 2 + 12345;
  std::vector<int32_t> small(static_cast<size_t>(n));
  std::vector<int64_t> wide(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    small[static_cast<size_t>(i)] = static_cast<int32_t>((i * 2654435761u) % 2000000011) - 1000000000;
    wide[static_cast<size_t>(i)] = static_cast<int64_t>(small[static_cast<size_t>(i)]) * 3;
  }
  TempDir t;
  npy::write(t / "small.npy", small.data(), {n / 5, 5});
  npy::write(t / "wide.npy", wide.data(), {n});
  std::vector<int64_t> shape;
  const auto converted = npy::read<int64_t>(t / "small.npy", &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{n / 5, 5}));
  ASSERT_EQ(converted.size(), static_cast<size_t>(n / 5 * 5));
  for (size_t i = 0; i < converted.size(); ++i) ASSERT_EQ(converted[i], small[i]) << i;
  EXPECT_EQ(npy::read<int64_t>(t / "wide.npy", &shape), wide);
  const auto as_double = npy::read<double>(t / "small.npy");
  for (size_t i = 0; i < as_double.size(); ++i) ASSERT_EQ(as_double[i], static_cast<double>(small[i])) << i;
  // A dtype it does not convert is one line naming the file.
  const uint16_t halves[4] = {0x3c00, 0x4000, 0x4200, 0x4400};
  const std::string header = "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }";
  std::string dict = header;
  dict.append(64 - (10 + dict.size() + 1) % 64, ' ');
  dict += '\n';
  std::ofstream f(t / "half.npy", std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(dict.size() & 0xff), static_cast<char>(dict.size() >> 8)};
  f.write(len, 2);
  f << dict;
  f.write(reinterpret_cast<const char*>(halves), sizeof halves);
  f.close();
  try {
    npy::read<float>(t / "half.npy");
    FAIL() << "float16 read as float";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("half.npy: unsupported dtype '<f2'"), std::string::npos) << e.what();
  }
}

TEST(StepClock, StepsInOrderWithOthersTimingsAdded) {
  StepClock clock;
  clock.lap("load");
  clock.add({{"write CSV", 2.5}, {"write VTP", 0.25}});
  clock.lap("commit");
  ASSERT_EQ(clock.steps().size(), 4u);
  EXPECT_EQ(clock.steps()[0].first, "load");
  EXPECT_EQ(clock.steps()[1], (std::pair<std::string, double>{"write CSV", 2.5}));
  EXPECT_EQ(clock.steps()[2], (std::pair<std::string, double>{"write VTP", 0.25}));
  EXPECT_EQ(clock.steps()[3].first, "commit");
  // The added steps moved the clock on: what follows them is not counted twice.
  EXPECT_LT(clock.steps()[3].second, -2.5);
  EXPECT_EQ(clock.json()["write CSV"].get<double>(), 2.5);
  const std::string line = clock.summary();
  EXPECT_EQ(line.rfind("steps: load ", 0), 0u) << line;
  EXPECT_NE(line.find(", write CSV 2.500 s, write VTP 0.250 s, commit "), std::string::npos) << line;
  EXPECT_NE(line.find(", total "), std::string::npos) << line;
}
