// The command line itself: `manifold COMMAND --help` for every subcommand
// (exit 0, its options listed with their defaults), typo suggestions, and
// exit 2 with one line naming the option for an unknown option, a missing
// value and an out-of-range value in every family of commands.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "manifold/npy.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
namespace fs = std::filesystem;

namespace {

struct HelpCase {
  std::string command;
  std::vector<std::string> lists;  ///< options (and defaults) its help must name
};

TEST(CliHelp, EveryCommandPrintsItsOptions) {
  const std::vector<HelpCase> cases = {
      {"info", {"DATA", "--dataset"}},
      {"knn",
       {"DATA", "-k,--k", "--metric", "(default: euclidean)", "--select", "--precision", "(default: exact)", "--mask",
        "-o,--output", "--overwrite", "--quiet"}},
      {"embed",
       {"GRAPHDIR", "--k", "--epsilon", "(default: median)", "--alpha", "--metadata", "FILE[:COLUMN]", "--max-matvecs",
        "(default: 20000)", "--eigensolver"}},
      {"run", {"DATA", "--embed-k", "--transform", "--demo", "--session", "--pdb", "(default: 1ubq)", "--mask"}},
      {"simulate", {"--pdb", "--count", "--axis", "--mix", "--hot-pixels", "--keep-water"}},
      {"simulate diffraction", {"--pdb", "--count", "--size", "(default: 32)", "--q-max"}},
      {"bench", {"-n", "(default: 20000)", "-d", "--data", "--json", "--min-time-s", "--select"}},
      {"bench embed", {"--manifold", "(default: swiss-roll)", "--eigenpairs", "--reembed-k", "--only"}},
      {"submit", {"DATA", "--profile", "-k,--k", "--backend"}},
      {"trajectory", {"EMBEDDINGDIR", "--coordinate", "--phase", "--path", "--bins", "(default: 50)", "--fps"}},
      {"cluster", {"EMBEDDINGDIR", "--clusters", "--max-clusters", "(default: 10)", "--restarts", "-o,--output"}},
  };
  for (const HelpCase& c : cases)
    for (const char* help : {" --help", " -h"}) {
      std::string out, err;
      EXPECT_EQ(run_cli(c.command + help, &err, &out), 0) << c.command << help << ": " << err;
      EXPECT_EQ(err, "") << c.command;
      EXPECT_NE(out.find("manifold " + (c.command == "simulate" ? std::string("simulate diffraction") : c.command)),
                std::string::npos)
          << out;
      for (const std::string& o : c.lists)
        EXPECT_NE(out.find(o), std::string::npos) << c.command << ": " << o << "\n" << out;
    }
  // The overview names the per-command help.
  std::string out;
  EXPECT_EQ(run_cli("--help", nullptr, &out), 0);
  EXPECT_NE(out.find("manifold COMMAND --help"), std::string::npos) << out;
}

TEST(CliHelp, HelpWinsOverOtherArguments) {
  // --help anywhere prints the help and does nothing else: no output folder.
  TempDir t;
  std::string out;
  EXPECT_EQ(run_cli("knn " + (t / "missing.npy") + " -k 3 -o " + (t / "o") + " --help", nullptr, &out), 0);
  EXPECT_NE(out.find("--metric"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(t / "o"));
}

struct BadCase {
  std::string args;
  std::string says;  ///< the one line holds this
};

TEST(CliHelp, TyposGetASuggestion) {
  TempDir t;
  const std::vector<BadCase> cases = {
      {"knn x.npy -k 3 --metrc cosine -o " + (t / "o"),
       "unknown option '--metrc' (did you mean --metric? see manifold knn --help)"},
      {"embed g --epsilom 2", "did you mean --epsilon?"},
      {"run x.npy -k 3 --embed-j 2 -o " + (t / "o"), "did you mean --embed-k?"},
      {"run x.npy -k 3 --overwirte -o " + (t / "o"), "did you mean --overwrite?"},
      {"bench embed --eigenpair 4", "did you mean --eigenpairs?"},
      {"simulate diffraction --photon 5", "did you mean --photons?"},
      {"trajectory e --coordinat 2 -o " + (t / "m.gif"), "did you mean --coordinate?"},
      {"cluster e --cluster 3 -o " + (t / "c.npy"), "did you mean --clusters?"},
      {"knm x.npy", "unknown command 'knm' (did you mean knn? see manifold --help)"},
  };
  for (const BadCase& c : cases) {
    std::string err;
    EXPECT_EQ(run_cli(c.args, &err), 2) << c.args << ": " << err;
    EXPECT_EQ(count_lines(err), 1) << c.args << ": " << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.args << ": " << err;
  }
  // Nothing near: no guess.
  std::string err;
  EXPECT_EQ(run_cli("knn x.npy -k 3 --zzzzzzzz -o " + (t / "o"), &err), 2);
  EXPECT_EQ(err.find("did you mean"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "o"));
}

TEST(CliHelp, BadArgumentsExitTwoWithOneLineNamingTheOption) {
  TempDir t;
  const std::string x = t / "x.npy", o = t / "o";
  npy::write(x, random_dataset(40, 3, 1).data(), {40, 3});
  // Per family: an unknown option, a missing value, a value out of range.
  const std::vector<BadCase> cases = {
      {"info " + x + " --bogus", "info: unknown option '--bogus'"},
      {"info " + x + " --dataset", "info: option --dataset needs a value (PATH)"},
      {"knn " + x + " --bogus -k 3 -o " + o, "knn: unknown option '--bogus'"},
      {"knn " + x + " -o " + o + " -k", "knn: option -k needs a value (K)"},
      {"knn " + x + " -k 0 -o " + o, "-k: 0 is out of range [1, 1048576]"},
      {"knn " + x + " -k 3 --threads 5000 -o " + o, "--threads: 5000 is out of range [0, 4096]"},
      {"embed " + o + " --bogus=3", "embed: unknown option '--bogus'"},
      {"embed " + o + " --metadata", "embed: option --metadata needs a value (FILE[:COLUMN])"},
      {"embed " + o + " --components 0", "--components: 0 is out of range [1, 1048576]"},
      {"run " + x + " -k 3 -o " + o + " --x", "run: unknown option '--x'"},
      {"run " + x + " -k 3 -o " + o + " --embed-k", "run: option --embed-k needs a value (K')"},
      {"run --demo --count 2 -o " + o, "--count: 2 is out of range"},
      {"simulate diffraction --pdb 1ubq --count 5 -o " + (t / "s.npy") + " --bogus",
       "simulate diffraction: unknown option"},
      {"simulate diffraction --pdb 1ubq -o " + (t / "s.npy") + " --count", "option --count needs a value (N)"},
      {"simulate diffraction --pdb 1ubq --count 5 --size 1 -o " + (t / "s.npy"), "--size: 1 is out of range [2, 4096]"},
      {"bench --bogus", "bench: unknown option '--bogus'"},
      {"bench --repeats", "bench: option --repeats needs a value (R)"},
      {"bench --repeats 0", "--repeats: 0 is out of range [1, 1000]"},
      {"bench embed --bogus", "bench embed: unknown option '--bogus'"},
      {"bench embed -n", "bench embed: option -n needs a value (N)"},
      {"bench embed -n 10", "-n: 10 is out of range"},
      {"submit --profile p.json " + x + " --bogus -o " + o, "submit: unknown option '--bogus'"},
      {"submit " + x + " -o " + o + " --profile", "submit: option --profile needs a value (FILE)"},
      {"submit --profile p.json " + x + " -k 0 -o " + o, "-k: 0 is out of range"},
      {"trajectory " + o + " --bogus -o " + (t / "m"), "trajectory: unknown option '--bogus'"},
      {"trajectory " + o + " --bins", "trajectory: option --bins needs a value (B)"},
      {"trajectory " + o + " --scale 65 -o " + (t / "m"), "--scale: 65 is out of range [0, 64]"},
      {"cluster " + o + " --bogus -o " + (t / "c.npy"), "cluster: unknown option '--bogus'"},
      {"cluster " + o + " -o", "cluster: option -o needs a value (FILE.npy)"},
      {"cluster " + o + " --max-clusters 1 -o " + (t / "c.npy"), "--max-clusters: 1 is out of range [2, 1000]"},
  };
  for (const BadCase& c : cases) {
    std::string err;
    EXPECT_EQ(run_cli(c.args, &err), 2) << c.args << ": " << err;
    EXPECT_EQ(count_lines(err), 1) << c.args << ": " << err;
    EXPECT_EQ(err.rfind("manifold: ", 0), 0u) << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.args << ": " << err;
  }
  EXPECT_FALSE(fs::exists(o));
  EXPECT_FALSE(fs::exists(t / "s.npy"));
}

TEST(CliHelp, OptionsTakeTheirValueEitherWay) {
  // --name=value and --name value, a negative number as a value, the last of
  // a repeated option, and the aliases (-o/--output, -q/--quiet, -k/--k).
  TempDir t;
  const std::string x = t / "x.npy";
  npy::write(x, random_dataset(60, 3, 2).data(), {60, 3});
  std::string err;
  ASSERT_EQ(run_cli("knn " + x + " --k=4 -k 5 --output=" + (t / "g") + " -q --backend cpu", &err), 0) << err;
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components=2 --epsilon -3 -q", &err), 2);
  EXPECT_NE(err.find("--epsilon"), std::string::npos) << err;
  EXPECT_NE(err.find("must be positive"), std::string::npos) << err;
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components=2 --k 5 --output " + (t / "e") + " --quiet", &err), 0) << err;
  std::vector<int64_t> shape;
  npy::read<int64_t>(t / "g/indices.npy", &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{60, 5}));  // the last -k counts
  EXPECT_TRUE(fs::exists(t / "e/embedding.npy"));
}

}  // namespace
