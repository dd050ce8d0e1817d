// Embedding files and session files: every writer round-trips (npy read
// back, VTP and CSV parsed here), the reader rejects inconsistent files, and
// output is all-or-nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "manifold/diffusion_map.h"
#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/session.h"
#include "test_support.h"

using namespace manifold;
using testing_support::slurp;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

DiffusionResult small_result(int64_t graph_points = 300) {
  std::mt19937_64 rng(4);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(static_cast<size_t>(graph_points * 3));
  for (auto& x : v) x = g(rng);
  Dataset ds(graph_points, 3, std::move(v));
  register_cpu_backend();
  KnnParams kp;
  kp.k = 10;
  Progress progress;
  KnnGraph graph = make_backend("cpu")->build(ds, kp, progress);
  DiffusionParams p;
  p.components = 5;
  p.epsilon = "auto";
  return diffusion_map(graph, p, progress);
}

std::vector<uint8_t> base64_decode(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  // Decode quads one by one: the length header is padded on its own.
  for (size_t i = 0; i + 4 <= s.size(); i += 4) {
    int a = val(s[i]), b = val(s[i + 1]), c = s[i + 2] == '=' ? 0 : val(s[i + 2]),
        d = s[i + 3] == '=' ? 0 : val(s[i + 3]);
    const uint32_t v = (a << 18) | (b << 12) | (c << 6) | d;
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (s[i + 2] != '=') out.push_back(static_cast<uint8_t>(v >> 8));
    if (s[i + 3] != '=') out.push_back(static_cast<uint8_t>(v));
  }
  return out;
}

/// One DataArray of a VTK XML file written with header_type UInt64: the
/// header quads decode to the byte count, the rest to the values.
struct VtpArray {
  std::string type, name;
  int components = 1;
  std::vector<uint8_t> bytes;
};

// Attribute `key` of an XML start tag's text, "" when absent.
std::string attribute(const std::string& tag, const std::string& key) {
  const std::string k = " " + key + "=\"";
  const size_t at = tag.find(k);
  if (at == std::string::npos) return {};
  const size_t from = at + k.size();
  return tag.substr(from, tag.find('"', from) - from);
}

// Scanned by hand: std::regex recurses once per character of the base64
// text, which overflows the stack under AddressSanitizer. `element`:
// "DataArray" (numbers) or "Array" (VTK's String arrays).
std::vector<VtpArray> parse_vtp(const std::string& text, const std::string& element = "DataArray") {
  std::vector<VtpArray> out;
  const std::string open = "<" + element + " ", end = "</" + element + ">";
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    const size_t tag_end = text.find('>', at);
    const size_t close = tag_end == std::string::npos ? tag_end : text.find(end, tag_end);
    if (close == std::string::npos) break;
    const std::string tag = text.substr(at, tag_end - at);
    if (attribute(tag, "format") != "binary" || attribute(tag, "NumberOfComponents").empty()) continue;
    VtpArray a;
    a.type = attribute(tag, "type");
    a.name = attribute(tag, "Name");
    a.components = std::stoi(attribute(tag, "NumberOfComponents"));
    std::string b64;
    for (size_t i = tag_end + 1; i < close; ++i)
      if (!std::isspace(static_cast<unsigned char>(text[i]))) b64 += text[i];
    // The UInt64 byte count is 8 bytes: 12 characters when padded alone.
    const auto header = base64_decode(b64.substr(0, 12));
    uint64_t nbytes = 0;
    std::memcpy(&nbytes, header.data(), 8);
    a.bytes = base64_decode(b64.substr(12));
    EXPECT_EQ(a.bytes.size(), nbytes) << a.name;
    out.push_back(std::move(a));
  }
  return out;
}

template <class T>
std::vector<T> as(const VtpArray& a) {
  std::vector<T> v(a.bytes.size() / sizeof(T));
  std::memcpy(v.data(), a.bytes.data(), v.size() * sizeof(T));
  return v;
}

TEST(EmbeddingIo, EveryFileRoundTrips) {
  DiffusionResult r = small_result();
  DiffusionParams p;
  p.components = 5;
  p.epsilon = "auto";
  TempDir t;
  write_embedding(t.path, r, p, nlohmann::json{{"n", 300}}, {{"note", "test"}});
  for (auto f :
       {"eigenvalues.npy", "embedding.npy", "point_index.npy", "embedding.csv", "embedding.vtp", "embedding.json"})
    EXPECT_TRUE(fs::exists(t / f)) << f;
  // Nothing temporary is left.
  for (auto& e : fs::directory_iterator(t.path)) EXPECT_NE(e.path().filename().string()[0], '.') << e.path();

  std::vector<int64_t> shape;
  EXPECT_EQ(npy::read<double>(t / "embedding.npy", &shape), r.coordinates);
  EXPECT_EQ(shape, (std::vector<int64_t>{r.n, 5}));
  EXPECT_EQ(npy::read<double>(t / "eigenvalues.npy", &shape), r.eigenvalues);
  EXPECT_EQ(npy::read<int64_t>(t / "point_index.npy", &shape), r.point_index);

  // CSV: header, then index and %.17g coordinates that parse back exactly.
  std::istringstream csv(slurp(t / "embedding.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "index,dc1,dc2,dc3,dc4,dc5");
  int64_t row = 0;
  while (std::getline(csv, line)) {
    std::istringstream ls(line);
    std::string cell;
    std::getline(ls, cell, ',');
    ASSERT_EQ(std::stoll(cell), r.point_index[row]);
    for (int c = 0; c < 5; ++c) {
      std::getline(ls, cell, ',');
      ASSERT_EQ(std::strtod(cell.c_str(), nullptr), r.coordinates[row * 5 + c]) << row << "," << c;
    }
    ++row;
  }
  EXPECT_EQ(row, r.n);

  // VTP: points, one array per coordinate, the index, and vertex cells.
  const std::string vtp = slurp(t / "embedding.vtp");
  EXPECT_NE(vtp.find("<VTKFile type=\"PolyData\""), std::string::npos);
  EXPECT_NE(vtp.find("NumberOfPoints=\"" + std::to_string(r.n) + "\""), std::string::npos);
  auto arrays = parse_vtp(vtp);
  ASSERT_EQ(arrays.size(), 5u + 1 + 1 + 2);
  for (int c = 0; c < 5; ++c) {
    ASSERT_EQ(arrays[c].name, "dc" + std::to_string(c + 1));
    ASSERT_EQ(arrays[c].type, "Float64");
    auto v = as<double>(arrays[c]);
    ASSERT_EQ(v.size(), static_cast<size_t>(r.n));
    for (int64_t i = 0; i < r.n; ++i) ASSERT_EQ(v[i], r.coordinates[i * 5 + c]);
  }
  EXPECT_EQ(arrays[5].name, "index");
  EXPECT_EQ(as<int64_t>(arrays[5]), r.point_index);
  auto pts = as<double>(arrays[6]);
  EXPECT_EQ(arrays[6].components, 3);
  ASSERT_EQ(pts.size(), static_cast<size_t>(r.n * 3));
  for (int64_t i = 0; i < r.n; ++i)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(pts[i * 3 + c], r.coordinates[i * 5 + c]);
  auto conn = as<int64_t>(arrays[7]), off = as<int64_t>(arrays[8]);
  ASSERT_EQ(conn.size(), static_cast<size_t>(r.n));
  for (int64_t i = 0; i < r.n; ++i) ASSERT_TRUE(conn[i] == i && off[i] == i + 1);

  // JSON: every parameter, epsilon and its rule, the BGH curve, extras.
  Embedding e = read_embedding(t.path);
  EXPECT_EQ(e.n, r.n);
  EXPECT_EQ(e.m, 5);
  EXPECT_EQ(e.coordinates, r.coordinates);
  EXPECT_EQ(e.eigenvalues, r.eigenvalues);
  EXPECT_EQ(e.point_index, r.point_index);
  const auto& j = e.metadata;
  EXPECT_EQ(j["epsilon"].get<double>(), r.epsilon);
  EXPECT_EQ(j["epsilon_rule"], "auto");
  for (auto key : {"k", "epsilon", "alpha", "components", "t", "symmetrize", "local_scaling", "tolerance"})
    EXPECT_TRUE(j["parameters"].contains(key)) << key;
  EXPECT_EQ(j["graph_components"], 1);
  EXPECT_TRUE(j["bgh"].contains("slope"));
  EXPECT_TRUE(j["timings_s"].contains("eigensolve"));
  EXPECT_EQ(j["note"], "test");
  EXPECT_EQ(j["graph"]["n"], 300);
}

TEST(EmbeddingIo, VtkReadsTheVtp) {
  // Cross-check with VTK's own reader when Debian's python3-vtk9 is there.
  if (std::system("/usr/bin/python3 -c 'import vtk' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-vtk9 is not installed";
  DiffusionResult r = small_result();
  DiffusionParams p;
  p.components = 5;
  TempDir t;
  write_embedding(t.path, r, p);
  const std::string script = t / "check.py";
  std::ofstream(script) << "import sys, vtk\n"
                           "r = vtk.vtkXMLPolyDataReader(); r.SetFileName(sys.argv[1]); r.Update()\n"
                           "o = r.GetOutput(); pd = o.GetPointData()\n"
                           "print(o.GetNumberOfPoints(), o.GetNumberOfVerts(), pd.GetNumberOfArrays(),\n"
                           "      repr(pd.GetArray('dc2').GetValue(7)), pd.GetArray('index').GetValue(299))\n";
  const std::string out = t / "out.txt";
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script + " " + (t / "embedding.vtp") + " > " + out).c_str()), 0);
  std::istringstream in(slurp(out));
  int64_t points, verts, arrays, last;
  double dc2;
  in >> points >> verts >> arrays >> dc2 >> last;
  EXPECT_EQ(points, r.n);
  EXPECT_EQ(verts, r.n);
  EXPECT_EQ(arrays, 6);
  EXPECT_EQ(dc2, r.coordinates[7 * 5 + 1]);
  EXPECT_EQ(last, 299);
}

TEST(EmbeddingIo, ReaderRejectsInconsistentFiles) {
  DiffusionResult r = small_result();
  DiffusionParams p;
  p.components = 5;
  TempDir t;
  write_embedding(t.path, r, p);
  auto message = [&] {
    try {
      read_embedding(t.path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(), "");
  std::vector<double> four(4, 0.5);
  npy::write(t / "eigenvalues.npy", four.data(), {4});
  EXPECT_NE(message().find("eigenvalues.npy: expected 6 eigenvalues"), std::string::npos) << message();
  npy::write(t / "eigenvalues.npy", r.eigenvalues.data(), {6});
  std::vector<int64_t> idx = r.point_index;
  idx[3] = 5000;
  npy::write(t / "point_index.npy", idx.data(), {r.n});
  EXPECT_NE(message().find("point_index.npy: index 5000"), std::string::npos) << message();
  idx.pop_back();
  npy::write(t / "point_index.npy", idx.data(), {r.n - 1});
  EXPECT_NE(message().find("point_index.npy: expected"), std::string::npos) << message();
  fs::remove(t / "point_index.npy");
  EXPECT_NE(message().find("point_index.npy: missing"), std::string::npos);
  EXPECT_THROW(read_embedding(t / "nowhere"), Error);
}

TEST(EmbeddingIo, FailedWriteLeavesNothing) {
  DiffusionResult r = small_result();
  DiffusionParams p;
  p.components = 5;
  TempDir t;
  r.point_index.pop_back();  // inconsistent result: rejected before anything is written
  EXPECT_THROW(write_embedding(t / "out", r, p), Error);
  EXPECT_FALSE(fs::exists(t / "out"));
  // A path through a regular file cannot be created.
  std::ofstream(t / "file") << "x";
  r = small_result();
  EXPECT_THROW(write_embedding(t / "file/out", r, p), Error);
}

TEST(EmbeddingIo, DisconnectedIndexSurvivesTheRoundTrip) {
  std::vector<float> v;
  std::mt19937_64 rng(2);
  std::normal_distribution<float> g(0, 1);
  for (int i = 0; i < 150; ++i) v.insert(v.end(), {g(rng), g(rng)});
  for (int i = 0; i < 60; ++i) v.insert(v.end(), {g(rng) + 100, g(rng)});
  Dataset ds(210, 2, std::move(v));
  register_cpu_backend();
  KnnParams kp;
  kp.k = 8;
  Progress progress;
  KnnGraph graph = make_backend("cpu")->build(ds, kp, progress);
  DiffusionParams p;
  p.components = 3;
  DiffusionResult r = diffusion_map(graph, p, progress);
  ASSERT_EQ(r.graph_components, 2);
  TempDir t;
  write_embedding(t.path, r, p);
  Embedding e = read_embedding(t.path);
  EXPECT_EQ(e.n, 150);
  EXPECT_EQ(e.point_index.back(), 149);
  EXPECT_EQ(e.metadata["graph_components"], 2);
  EXPECT_EQ(e.metadata["graph_points"], 210);
}

/// A session that sets every field from its default (relative paths).
Session example_session() {
  Session s;
  s.data = "images/stack.npy";
  s.transform = "anscombe";
  s.backend = "cpu";
  s.knn.k = 17;
  s.knn.metric = Metric::Cosine;
  s.knn.select = Select::Bitonic;
  s.knn.precision = Precision::FastExact;
  s.diffusion.k = 12;
  s.diffusion.epsilon = "auto";
  s.diffusion.alpha = 0.5;
  s.diffusion.components = 7;
  s.diffusion.t = 2;
  s.diffusion.symmetrize = "average";
  s.diffusion.local_scaling = 4;
  s.output = "run1";
  s.view = {{"axes", {1, 2, 3}}};
  s.metadata = {"labels.npy:class", "/elsewhere/facts.cxi:/entry_1/sample_1/rotation_angle"};
  return s;
}

TEST(Session, RoundTripsAndResolvesPaths) {
  TempDir t;
  const Session s = example_session();
  fs::create_directories(t / "sessions");
  write_session(t / "sessions/a.json", s);
  Session b = read_session(t / "sessions/a.json");
  // Metadata files relative like "data" (the column after the file untouched).
  ASSERT_EQ(b.metadata.size(), 2u);
  EXPECT_EQ(b.metadata[0], (fs::path(t / "sessions") / "labels.npy").string() + ":class");
  EXPECT_EQ(b.metadata[1], s.metadata[1]);
  EXPECT_EQ(b.data, (fs::path(t / "sessions") / "images/stack.npy").lexically_normal().string());
  EXPECT_EQ(b.output, (fs::path(t / "sessions") / "run1").lexically_normal().string());
  EXPECT_EQ(b.transform, "anscombe");
  EXPECT_EQ(b.backend, "cpu");
  EXPECT_EQ(b.knn.k, 17);
  EXPECT_EQ(b.knn.metric, Metric::Cosine);
  EXPECT_EQ(b.knn.select, Select::Bitonic);
  EXPECT_EQ(b.knn.precision, Precision::FastExact);
  EXPECT_EQ(b.diffusion.k, 12);
  EXPECT_EQ(b.diffusion.epsilon, "auto");
  EXPECT_EQ(b.diffusion.alpha, 0.5);
  EXPECT_EQ(b.diffusion.components, 7);
  EXPECT_EQ(b.diffusion.t, 2);
  EXPECT_EQ(b.diffusion.symmetrize, "average");
  EXPECT_EQ(b.diffusion.local_scaling, 4);
  EXPECT_EQ(b.view["axes"][2], 3);
}

TEST(Session, BadFieldsAreOneLineNamingTheFile) {
  TempDir t;
  const Session s = example_session();
  // A number for epsilon is accepted; typos and wrong types are errors naming the file.
  nlohmann::json j = session_to_json(s);
  j["diffusion"]["epsilon"] = 0.25;
  // The names sessions have always held.
  EXPECT_EQ(j["knn"]["select"], "bitonic");
  EXPECT_EQ(j["knn"]["precision"], "fast-exact");
  EXPECT_EQ(session_from_json(j, "", "x.json").diffusion.epsilon, "0.25");
  auto msg = [&](const nlohmann::json& bad) {  // by reference: a deep copy recurses
    try {
      session_from_json(bad, "", "x.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json bad = j;
  bad["diffusion"]["alpah"] = 1;
  EXPECT_NE(msg(bad).find("x.json: unknown key 'diffusion.alpah'"), std::string::npos);
  bad = j;
  bad["knn"]["k"] = "ten";
  EXPECT_NE(msg(bad).find("x.json: \"knn.k\" must be an integer from 1 to"), std::string::npos) << msg(bad);
  // Sessions are input too (issue 24): the command line's limits hold, a
  // float is no integer (1e20 was undefined behaviour), views nest little.
  bad = j;
  bad["knn"]["k"] = 1e20;
  EXPECT_NE(msg(bad).find("\"knn.k\" must be an integer"), std::string::npos) << msg(bad);
  bad = j;
  bad["knn"]["threads"] = 1000000;
  EXPECT_NE(msg(bad).find("\"knn.threads\" must be an integer from 0 to 4096"), std::string::npos) << msg(bad);
  bad = j;
  bad["diffusion"]["components"] = 2.5;
  EXPECT_NE(msg(bad).find("\"diffusion.components\""), std::string::npos) << msg(bad);
  bad = j;
  bad["diffusion"]["alpha"] = "one";
  EXPECT_NE(msg(bad).find("\"diffusion.alpha\" must be a finite number"), std::string::npos) << msg(bad);
  for (nlohmann::json m : {nlohmann::json(3), nlohmann::json::array({""}), nlohmann::json::array({1})}) {
    bad = j;
    bad["metadata"] = m;
    EXPECT_NE(msg(bad).find("x.json: \"metadata\" must be a list of FILE or FILE:COLUMN"), std::string::npos)
        << msg(bad);
  }
  bad = j;
  nlohmann::json deep = 1;
  for (int i = 0; i < 100000; ++i) deep = nlohmann::json::array({std::move(deep)});
  bad["view"] = std::move(deep);
  EXPECT_NE(msg(bad).find("\"view\" is nested more than 16 levels"), std::string::npos) << msg(bad).substr(0, 200);
  bad = j;
  bad.erase("data");
  EXPECT_NE(msg(bad).find("missing \"data\""), std::string::npos);
  for (nlohmann::json data : {nlohmann::json(5), nlohmann::json("")}) {
    bad = j;
    bad["data"] = data;
    EXPECT_NE(msg(bad).find("x.json: \"data\" must be the dataset path"), std::string::npos) << msg(bad);
  }
  bad = j;
  bad["format"] = "other";
  EXPECT_NE(msg(bad).find("not a manifold session"), std::string::npos);
  bad = j;
  bad["knn"]["metric"] = "manhattan";
  EXPECT_NE(msg(bad).find("x.json: --metric"), std::string::npos);
  bad = j;
  bad["knn"]["select"] = "fastest";
  EXPECT_NE(msg(bad).find("x.json: --select: unknown strategy 'fastest'"), std::string::npos) << msg(bad);
  bad = j;
  bad["knn"]["precision"] = "fast";
  EXPECT_NE(msg(bad).find("x.json: --precision: unknown value 'fast'"), std::string::npos) << msg(bad);
  std::ofstream(t / "broken.json") << "{ not json";
  EXPECT_THROW(read_session(t / "broken.json"), Error);
  // A folder where the session should be: said as such (a folder opens as a
  // stream and failed only when read, in the C++ library's words).
  fs::create_directories(t / "folder.json");
  try {
    read_session(t / "folder.json");
    ADD_FAILURE() << "a folder was read as a session";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), t / "folder.json" + ": is a folder, not a session file");
  }
}

}  // namespace

namespace {

TEST(AtomicWrite, APlantedSymlinkIsNeverFollowed) {
  // Issue 24: temporary names were predictable (PATH.tmp) and opened with
  // O_TRUNC, so a symlink planted in a shared folder made a run overwrite
  // another file. Now the temporary file is new (O_EXCL | O_NOFOLLOW) with
  // an unpredictable name, and the result replaces the symlink itself.
  testing_support::TempDir t;
  const std::string victim = t / "victim.txt";
  write_text_file(victim, "keep me\n");
  const std::string out = t / "graph.json";
  fs::create_symlink(victim, out + ".tmp");  // the old temporary name
  fs::create_symlink(victim, out);           // and the output itself
  write_text_file(out, "{}\n");
  const float x[2] = {1.f, 2.f};
  fs::create_symlink(victim, t / "a.npy.tmp");
  npy::write(t / "a.npy", x, {2});
  std::ifstream in(victim);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "keep me\n");
  EXPECT_FALSE(fs::is_symlink(out));
  std::ifstream g(out);
  std::string text((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{}\n");
  EXPECT_EQ(npy::read<float>(t / "a.npy"), (std::vector<float>{1.f, 2.f}));
  // No temporary file is left behind.
  int temporaries = 0;
  for (auto& e : fs::directory_iterator(t.path))
    temporaries += e.path().filename().string().find(".tmp-") != std::string::npos;
  EXPECT_EQ(temporaries, 0);
}

// Metadata columns in the embedding files (issue 23): after the coordinates,
// in point_index order, NaN as an empty CSV field, category names quoted
// when needed, names that clash with a coordinate or "index" suffixed, and
// the correlation block in embedding.json.
TEST(EmbeddingIo, MetadataColumnsFollowPointIndex) {
  DiffusionResult r = small_result();
  r.point_index = {};
  // Pretend the embedded points were rows 2, 4, 6, ... of a table of 2n rows.
  for (int64_t e = 0; e < r.n; ++e) r.point_index.push_back(2 * e);
  r.graph_points = 2 * r.n;
  MetadataTable t(2 * r.n);
  MetadataColumn index, dc1, cls;
  index.name = "index";
  dc1.name = "dc1";
  cls.name = "class \"A\"";
  cls.kind = MetadataKind::Categorical;
  cls.categories = {"plain", "with, comma"};
  for (int64_t i = 0; i < 2 * r.n; ++i) {
    index.values.push_back(i % 10 == 0 ? std::nan("") : static_cast<double>(i) + 0.5);
    dc1.values.push_back(-static_cast<double>(i));
    cls.codes.push_back(i % 4 == 0 ? 1 : 0);
  }
  t.add(index);
  t.add(dc1);
  t.add(cls);
  TempDir dir;
  write_embedding(dir.path, r, DiffusionParams{}, nullptr, nullptr, &t);

  std::istringstream csv(slurp(dir / "embedding.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "index,dc1,dc2,dc3,dc4,dc5,index_2,dc1_2,\"class \"\"A\"\"\"");
  int64_t e = 0;
  while (std::getline(csv, line)) {
    const int64_t row = std::stoll(line);
    ASSERT_EQ(row, r.point_index[e]);
    std::string rest = line;
    for (int c = 0; c < 6; ++c) rest = rest.substr(rest.find(',') + 1);
    const std::string first = rest.substr(0, rest.find(','));
    if (row % 10 == 0) EXPECT_EQ(first, "") << line;
    else
      EXPECT_EQ(std::stod(first), static_cast<double>(row) + 0.5) << line;
    rest = rest.substr(rest.find(',') + 1);
    EXPECT_EQ(std::stod(rest.substr(0, rest.find(','))), -static_cast<double>(row)) << line;
    EXPECT_EQ(rest.substr(rest.find(',') + 1), row % 4 == 0 ? "\"with, comma\"" : "plain") << line;
    ++e;
  }
  EXPECT_EQ(e, r.n);

  const auto arrays = parse_vtp(slurp(dir / "embedding.vtp"));
  const VtpArray* codes = nullptr;
  const VtpArray* first = nullptr;
  for (const auto& a : arrays) {
    if (a.name == "class &quot;A&quot;") codes = &a;
    if (a.name == "index_2") first = &a;
  }
  ASSERT_TRUE(codes && first);
  EXPECT_EQ(codes->type, "Int32");
  const auto c = as<int32_t>(*codes);
  const auto v = as<double>(*first);
  ASSERT_EQ(static_cast<int64_t>(c.size()), r.n);
  for (int64_t p = 0; p < r.n; ++p) {
    ASSERT_EQ(c[p], r.point_index[p] % 4 == 0 ? 1 : 0);
    if (r.point_index[p] % 10 == 0) ASSERT_TRUE(std::isnan(v[p]));
    else
      ASSERT_EQ(v[p], static_cast<double>(r.point_index[p]) + 0.5);
  }
  const std::string vtp = slurp(dir / "embedding.vtp");
  EXPECT_NE(vtp.find("<Array type=\"String\" Name=\"class &quot;A&quot;_categories\" NumberOfTuples=\"2\""),
            std::string::npos);

  const Embedding back = read_embedding(dir.path);
  EXPECT_EQ(back.coordinates, r.coordinates);
  const auto& cols = back.metadata["metadata_correlation"]["columns"];
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[0]["name"], "index_2");
  EXPECT_EQ(cols[0]["rows_used"].get<int64_t>(), r.n - (r.n + 4) / 5);  // rows 0, 10, 20, ... have no value
  EXPECT_EQ(cols[2]["statistic"], "correlation_ratio");
}

/// The records of an RFC 4180 text: quoted fields may hold commas, line
/// breaks and doubled quotes. Written here from the RFC, not from the writer.
std::vector<std::vector<std::string>> csv_records(const std::string& text) {
  std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = records.back().back();
    if (quoted) {
      if (c != '"') field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().emplace_back();
    } else if (c == '\n') {
      records.emplace_back(1);
    } else {
      field += c;
    }
  }
  if (records.back() == std::vector<std::string>(1)) records.pop_back();  // after the last line break
  return records;
}

// The single-file writers (the explorer's .csv and .vtp exports call them
// directly) rename a metadata column that clashes with a coordinate, "index"
// or "file" as write_embedding does: the explorer's own "index" column was
// written as a second "index" array, and VTK's reader crashed on the
// "file" array after it.
TEST(EmbeddingIo, SingleFileWritersGiveEveryColumnItsOwnName) {
  const DiffusionResult r = small_result();
  MetadataTable t(r.graph_points);
  for (const char* name : {"index", "dc1", "file"}) {
    MetadataColumn c;
    c.name = name;
    for (int64_t i = 0; i < r.graph_points; ++i) c.values.push_back(static_cast<double>(i));
    t.add(c);
  }
  std::vector<std::string> names;
  for (int64_t i = 0; i < r.graph_points; ++i) names.push_back("p" + std::to_string(i) + ".png");
  const auto coords = coordinate_names(r.m);
  TempDir dir;
  write_csv(dir / "e.csv", r.n, r.m, r.coordinates.data(), r.point_index.data(), coords, &t, &names);
  write_vtp(dir / "e.vtp", r.n, r.m, r.coordinates.data(), r.point_index.data(), coords, &t, &names);
  const auto records = csv_records(slurp(dir / "e.csv"));
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0], (std::vector<std::string>{"index", "dc1", "dc2", "dc3", "dc4", "dc5", "index_2", "dc1_2",
                                                  "file_2", "file"}));
  std::vector<std::string> arrays;
  const std::string vtp = slurp(dir / "e.vtp");
  for (const char* tag : {"DataArray", "Array"})
    for (const VtpArray& a : parse_vtp(vtp, tag))
      if (a.name != "Points" && a.name != "connectivity" && a.name != "offsets") arrays.push_back(a.name);
  std::sort(arrays.begin(), arrays.end());
  EXPECT_EQ(std::adjacent_find(arrays.begin(), arrays.end()), arrays.end()) << "two arrays of one name";
  for (const char* name : {"index", "index_2", "dc1_2", "file_2", "file"})
    EXPECT_TRUE(std::binary_search(arrays.begin(), arrays.end(), std::string(name))) << name;
}

// Rows of an image folder keep their file names (QA): the CSV's last column
// "file", quoted as RFC 4180 wants where a name holds a comma, a quote, a
// line break or outer spaces, and a String point-data array "file" in the
// VTP, both in point_index order; a metadata column named "file" becomes
// file_2.
TEST(EmbeddingIo, ItemNamesNameEveryPointInCsvAndVtp) {
  DiffusionResult r = small_result();
  r.point_index = {};
  for (int64_t e = 0; e < r.n; ++e) r.point_index.push_back(2 * e + 1);  // rows 1, 3, 5, ... of 2n
  r.graph_points = 2 * r.n;
  const std::vector<std::string> awkward = {
      "a, b.png", "say \"hi\".png", " lead.png", "trail .png", "two\nlines.png", "plain.png", "\xc3\xbcn\xc3\xaf.png"};
  std::vector<std::string> names;
  for (int64_t i = 0; i < 2 * r.n; ++i)
    names.push_back(std::to_string(i) + awkward[static_cast<size_t>(i) % awkward.size()]);
  MetadataTable t(2 * r.n);
  MetadataColumn file;
  file.name = "file";
  for (int64_t i = 0; i < 2 * r.n; ++i) file.values.push_back(static_cast<double>(i));
  t.add(file);
  TempDir dir;
  write_embedding(dir.path, r, DiffusionParams{}, nullptr, nullptr, &t, &names);

  const auto records = csv_records(slurp(dir / "embedding.csv"));
  ASSERT_EQ(static_cast<int64_t>(records.size()), r.n + 1);
  EXPECT_EQ(records[0], (std::vector<std::string>{"index", "dc1", "dc2", "dc3", "dc4", "dc5", "file_2", "file"}));
  for (int64_t e = 0; e < r.n; ++e) {
    const auto& record = records[static_cast<size_t>(e + 1)];
    ASSERT_EQ(record.size(), 8u) << e;
    const int64_t row = r.point_index[static_cast<size_t>(e)];
    ASSERT_EQ(record[0], std::to_string(row));
    ASSERT_EQ(std::stod(record[6]), static_cast<double>(row));
    ASSERT_EQ(record[7], names[static_cast<size_t>(row)]);
  }

  const std::string vtp = slurp(dir / "embedding.vtp");
  std::vector<std::string> in_vtp;
  for (const VtpArray& a : parse_vtp(vtp, "Array"))
    if (a.name == "file") {
      EXPECT_EQ(a.type, "String");
      std::string s;
      for (uint8_t b : a.bytes)
        if (b) s += static_cast<char>(b);
        else
          in_vtp.push_back(s), s.clear();
    }
  ASSERT_EQ(static_cast<int64_t>(in_vtp.size()), r.n);
  for (int64_t e = 0; e < r.n; ++e)
    ASSERT_EQ(in_vtp[static_cast<size_t>(e)], names[static_cast<size_t>(r.point_index[static_cast<size_t>(e)])]);
  // In point data, beside the coordinates, where ParaView lists a point's arrays.
  const size_t point_data = vtp.find("<PointData"), array = vtp.find("<Array type=\"String\" Name=\"file\"");
  EXPECT_LT(point_data, array);
  EXPECT_LT(array, vtp.find("</PointData>"));

  // Without names, no column and no array; names that miss a row are refused.
  TempDir plain;
  write_embedding(plain.path, r, DiffusionParams{});
  EXPECT_EQ(csv_records(slurp(plain / "embedding.csv"))[0].back(), "dc5");
  EXPECT_EQ(slurp(plain / "embedding.vtp").find("Name=\"file\""), std::string::npos);
  const std::vector<std::string> short_names(names.begin(), names.begin() + r.n);
  const int64_t beyond = *std::find_if(r.point_index.begin(), r.point_index.end(), [&](int64_t i) { return i >= r.n; });
  EXPECT_EQ(testing_support::message_of([&] {
              write_embedding(dir / "short", r, DiffusionParams{}, nullptr, nullptr, nullptr, &short_names);
            }),
            "item names: point index " + std::to_string(beyond) + " is beyond its " + std::to_string(r.n) + " names");
  EXPECT_FALSE(fs::exists(dir / "short"));
}

// The CSV and VTP writers, which the GUI's export calls on a path the user
// chose: a symlink planted at the old predictable temporary name (PATH.tmp)
// is never followed, and nothing temporary is left.
TEST(EmbeddingIo, ExportWritersNeverFollowAPlantedTemporary) {
  TempDir t;
  const std::string victim = t / "victim.txt";
  write_text_file(victim, "keep me\n");
  const double x[4] = {1, 2, 3, 4};
  const int64_t index[2] = {0, 1};
  fs::create_symlink(victim, t / "e.csv.tmp");
  fs::create_symlink(victim, t / "e.vtp.tmp");
  write_csv(t / "e.csv", 2, 2, x, index, {"dc1", "dc2"});
  write_vtp(t / "e.vtp", 2, 2, x, index, {"dc1", "dc2"});
  EXPECT_EQ(slurp(victim), "keep me\n");
  EXPECT_EQ(slurp(t / "e.csv"), "index,dc1,dc2\n0,1,2\n1,3,4\n");
  EXPECT_NE(slurp(t / "e.vtp").find("<VTKFile"), std::string::npos);
  int temporaries = 0;
  for (auto& e : fs::directory_iterator(t.path))
    temporaries += e.path().filename().string().find(".tmp-") != std::string::npos;
  EXPECT_EQ(temporaries, 0);
  // A folder that cannot be written names the file, and leaves nothing.
  EXPECT_THROW(write_csv(t / "missing/e.csv", 2, 2, x, index, {"dc1", "dc2"}), Error);
}

}  // namespace
