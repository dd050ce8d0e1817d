// The demo's molecule without Debian's freesasa: 1UBQ is bundled under
// resources/pdb and found from the executable's folder. MANIFOLD_PDB_PATH
// replaces the system folders, so pointing it at an empty folder is a machine
// without freesasa.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "manifold/error.h"
#include "manifold/pdb.h"
#include "manifold/settings.h"
#include "manifold/simulate.h"
#include "test_support.h"

using namespace manifold;
using testing_support::run_cli;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

/// Sets MANIFOLD_PDB_PATH for the scope: in the environment for child
/// processes, in core's settings for this one (read once per process).
class PdbPath {
 public:
  explicit PdbPath(const std::string& value) : settings_(with_pdb_path(value)) {
    if (const char* old = std::getenv("MANIFOLD_PDB_PATH")) old_ = old, had_ = true;
    setenv("MANIFOLD_PDB_PATH", value.c_str(), 1);
  }
  ~PdbPath() {
    if (had_) setenv("MANIFOLD_PDB_PATH", old_.c_str(), 1);
    else
      unsetenv("MANIFOLD_PDB_PATH");
  }

 private:
  static Settings with_pdb_path(const std::string& value) {
    static std::string held;
    held = value;
    return settings_from_environment([](const char* name) -> const char* {
      return std::string(name) == "MANIFOLD_PDB_PATH" ? held.c_str() : nullptr;
    });
  }

  ScopedSettings settings_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST(DemoAnywhere, BundledUbiquitinFoundWithoutFreesasa) {
  TempDir empty;
  PdbPath path(empty.path);
  for (const std::string& dir : pdb_search_path()) EXPECT_EQ(dir.find("freesasa"), std::string::npos) << dir;
  const std::string pdb = find_packaged_pdb("1ubq");
  EXPECT_EQ(fs::path(pdb).parent_path().filename(), "pdb") << pdb;
  EXPECT_EQ(fs::path(pdb).parent_path().parent_path().filename(), "resources") << pdb;
  const Molecule mol = read_pdb(pdb);
  EXPECT_EQ(mol.id, "1UBQ");
  EXPECT_EQ(mol.atoms.size(), 602u);  // 660 ATOM/HETATM records less 58 waters
}

TEST(DemoAnywhere, UserFoldersComeFirstAndMissingIdsNameTheFolders) {
  TempDir mine;
  std::ofstream(mine / "1ubq.pdb")
      << "HEADER    TEST                                    01-JAN-00   0TST\n"
         "ATOM      1  CA  GLY A   1       1.000   2.000   3.000  1.00  0.00           C\n";
  TempDir empty;
  PdbPath path(mine.path + ":" + empty.path);
  EXPECT_EQ(find_packaged_pdb("1ubq"), mine / "1ubq.pdb");
  try {
    find_packaged_pdb("9zzz");
    FAIL() << "9zzz.pdb found";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("9zzz.pdb: not found in " + mine.path + ", " + empty.path), std::string::npos) << what;
    EXPECT_NE(what.find("MANIFOLD_PDB_PATH"), std::string::npos) << what;
  }
}

TEST(DemoAnywhere, CliDemoAndSimulateRunFromTheBundledFile) {
  if (!std::getenv("MANIFOLD_CLI")) GTEST_SKIP() << "MANIFOLD_CLI not set (run through ctest)";
  TempDir empty, t;
  PdbPath path(empty.path);
  std::string err, out;
  ASSERT_EQ(run_cli("run --demo --count 60 --size 12 -q -o " + (t / "demo"), &err, &out), 0) << err;
  std::ifstream in(t / "demo/embedding.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["demo"]["molecule"], "1UBQ");
  EXPECT_EQ(j["demo"]["simulation"]["atoms"], 602);
  ASSERT_EQ(run_cli("simulate diffraction --pdb 1ubq --count 5 --size 8 -q -o " + (t / "p.npy"), &err), 0) << err;
  EXPECT_TRUE(fs::exists(t / "p.npy"));
  // An id that is nowhere: one line, exit status of an error, no output file.
  EXPECT_NE(run_cli("simulate diffraction --pdb 9zzz --count 5 --size 8 -q -o " + (t / "q.npy"), &err), 0);
  EXPECT_NE(err.find("9zzz.pdb: not found in " + empty.path), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "q.npy"));
}
