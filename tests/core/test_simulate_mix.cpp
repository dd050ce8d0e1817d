// Mixed diffraction sets for hit classification: --mix fractions, exact
// class counts, labels beside the patterns, blanks holding only background.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/pdb.h"
#include "manifold/simulate.h"
#include "test_support.h"

using namespace manifold;
using testing_support::run_cli;
using testing_support::TempDir;

namespace {

std::string mix_error(const std::string& text) {
  try {
    parse_mix(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

DiffractionImages simulate_mix(double photons, double background) {
  DiffractionParams p;
  p.count = 50;
  p.size = 8;
  p.axis = "random";
  p.photons = photons;
  p.background = background;
  p.seed = 7;
  p.mix = parse_mix("blank=0.3,single=0.5,double=0.2");
  Progress quiet;
  return simulate_diffraction(read_pdb(find_packaged_pdb("1ubq")), p, quiet);
}

std::vector<double> totals(const DiffractionImages& d) {
  std::vector<double> t(static_cast<size_t>(d.count), 0.0);
  for (int64_t i = 0; i < d.count; ++i)
    for (int64_t k = 0; k < d.size * d.size; ++k)
      t[static_cast<size_t>(i)] += d.images[static_cast<size_t>(i * d.size * d.size + k)];
  return t;
}

}  // namespace

TEST(SimulateMix, ParsesFractionsAndRejectsBadOnes) {
  EXPECT_EQ(parse_mix("blank=0.3,single=0.5,double=0.2"), (std::vector<double>{0.3, 0.5, 0.2}));
  EXPECT_EQ(parse_mix("double=0.25,single=0.75"), (std::vector<double>{0, 0.75, 0.25}));
  EXPECT_EQ(parse_mix("single=1"), (std::vector<double>{0, 1, 0}));
  EXPECT_NE(mix_error("blank=0.5,single=0.6").find("--mix: the fractions sum to 1.1, not 1"), std::string::npos)
      << mix_error("blank=0.5,single=0.6");
  EXPECT_NE(mix_error("triple=1").find("--mix: 'triple=1' is not CLASS=FRACTION"), std::string::npos);
  EXPECT_NE(mix_error("single=0.5,single=0.5").find("--mix: single given twice"), std::string::npos);
  EXPECT_NE(mix_error("blank=-0.5,single=1.5").find("must be a number in [0, 1]"), std::string::npos);
  EXPECT_NE(mix_error("single").find("is not CLASS=FRACTION"), std::string::npos);
  EXPECT_NE(mix_error("single=x").find("must be a number"), std::string::npos);
  EXPECT_NE(mix_error("").find("--mix"), std::string::npos);
}

TEST(SimulateMix, ExactCountsBlanksHoldBackgroundDoublesTwoMolecules) {
  const DiffractionImages d = simulate_mix(2000, 300);
  ASSERT_EQ(d.labels.size(), 50u);
  int count[3] = {0, 0, 0};
  for (int32_t l : d.labels) ++count[l];
  EXPECT_EQ(count[0], 15);
  EXPECT_EQ(count[1], 25);
  EXPECT_EQ(count[2], 10);
  // Shuffled, not in blocks.
  EXPECT_FALSE(std::is_sorted(d.labels.begin(), d.labels.end()));
  double mean[3] = {0, 0, 0};
  const auto t = totals(d);
  for (size_t i = 0; i < t.size(); ++i) mean[d.labels[i]] += t[i] / count[d.labels[i]];
  // Blanks: Poisson(300) totals; singles 300 + 2000 and doubles 300 + 2 x 2000 on average.
  EXPECT_NEAR(mean[0], 300, 5 * std::sqrt(300.0 / 15));
  EXPECT_NEAR(mean[1], 2300, 400);
  EXPECT_NEAR(mean[2], 4300, 800);
  EXPECT_GT(mean[2] / mean[1], 1.5);
  EXPECT_EQ(d.metadata["classes"], (std::vector<std::string>{"blank", "single", "double"}));
  EXPECT_EQ(d.metadata["mix"]["double"], 0.2);
  // Without noise a blank is empty.
  const DiffractionImages clean = simulate_mix(0, 0);
  const auto ct = totals(clean);
  for (size_t i = 0; i < ct.size(); ++i) {
    if (clean.labels[i] == 0) EXPECT_EQ(ct[i], 0.0) << i;
    else
      EXPECT_GT(ct[i], 0.0) << i;
  }
}

TEST(SimulateMix, WithoutMixNothingChangesAndBackgroundNeedsNoise) {
  DiffractionParams p;
  p.count = 6;
  p.size = 8;
  p.photons = 1000;
  Progress quiet;
  const Molecule mol = read_pdb(find_packaged_pdb("1ubq"));
  const DiffractionImages plain = simulate_diffraction(mol, p, quiet);
  EXPECT_TRUE(plain.labels.empty());
  EXPECT_FALSE(plain.metadata.contains("classes"));
  // All single hits with no background: the same patterns as no mix at all.
  p.mix = parse_mix("single=1");
  const DiffractionImages single = simulate_diffraction(mol, p, quiet);
  EXPECT_EQ(single.images, plain.images);
  // Fluence jitter: the same mean, a wider spread of totals.
  p.mix.clear();
  p.count = 200;
  const DiffractionImages steady = simulate_diffraction(mol, p, quiet);
  p.fluence_jitter = 0.5;
  const DiffractionImages jittered = simulate_diffraction(mol, p, quiet);
  auto spread = [](const std::vector<double>& t) {
    double mean = 0, var = 0;
    for (double x : t) mean += x / static_cast<double>(t.size());
    for (double x : t) var += (x - mean) * (x - mean) / static_cast<double>(t.size() - 1);
    return std::pair{mean, std::sqrt(var) / mean};
  };
  const auto [m0, s0] = spread(totals(steady));
  const auto [m1, s1] = spread(totals(jittered));
  EXPECT_NEAR(m1, m0, 0.15 * m0);
  EXPECT_NEAR(s1, 0.5, 0.12);
  EXPECT_LT(s0, 0.25);
  p.fluence_jitter = -1;
  EXPECT_THROW(validate(p), UsageError);
  p.fluence_jitter = 0;
  p.photons = 0;
  p.background = 10;
  EXPECT_THROW(validate(p), UsageError);
}

TEST(SimulateMix, CliWritesLabelsBesideThePatterns) {
  if (!std::getenv("MANIFOLD_CLI")) GTEST_SKIP() << "MANIFOLD_CLI not set (run through ctest)";
  TempDir t;
  std::string err, out;
  ASSERT_EQ(run_cli("simulate diffraction --pdb 1ubq --count 20 --size 8 --axis random --photons 500 --background 50 "
                    "--mix blank=0.25,single=0.5,double=0.25 -o " +
                        (t / "m.npy"),
                    &err, &out),
            0)
      << err;
  EXPECT_NE(out.find("m.labels.npy (blank, single, double)"), std::string::npos) << out;
  std::vector<int64_t> shape;
  const auto labels = npy::read<int32_t>(t / "m.labels.npy", &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{20}));
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 0), 5);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 2), 5);
  std::ifstream in(t / "m.json");
  EXPECT_EQ(nlohmann::json::parse(in)["background_photons"], 50.0);
  EXPECT_EQ(run_cli("simulate diffraction --pdb 1ubq --count 20 --mix blank=0.5,single=0.6 -o " + (t / "x.npy"), &err),
            2);
  EXPECT_NE(err.find("--mix: the fractions sum to"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(t / "x.npy"));
}
