// The CPU diffraction simulator (see simulate.h for the physics).
//
// On the flat detector q = (q_x, q_y, 0), so exp(i q . r) = exp(i q_x x)
// exp(i q_y y): per element the S x S amplitude is a complex matrix product
// X^T Y of per-atom phase rows, O(S^2 atoms) multiply-adds per pattern
// instead of S^2 atoms complex exponentials.
#include <Eigen/Dense>

#include <array>
#include <chrono>
#include <cmath>
#include <complex>
#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "manifold/error.h"
#include "manifold/printable.h"
#include "manifold/parallel.h"
#include "manifold/simulate.h"

namespace manifold {

namespace {

using Mat3 = std::array<std::array<double, 3>, 3>;

Mat3 quaternion_matrix(double w, double x, double y, double z) {
  return {{{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
           {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
           {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}}};
}

// Independent streams per pattern so the result does not depend on threads.
std::mt19937_64 pattern_rng(uint64_t seed, int64_t i, uint64_t role) {
  std::seed_seq seq{seed, static_cast<uint64_t>(i), role};
  return std::mt19937_64(seq);
}

/// Labels with round(fraction x count) of each class (largest remainders
/// take what rounding leaves), in a seeded random order.
std::vector<int32_t> hit_labels(const std::vector<double>& mix, int64_t count, uint64_t seed) {
  std::vector<int64_t> n(mix.size());
  std::vector<std::pair<double, size_t>> remainder;
  int64_t given = 0;
  for (size_t c = 0; c < mix.size(); ++c) {
    const double want = mix[c] * static_cast<double>(count);
    n[c] = static_cast<int64_t>(std::floor(want));
    given += n[c];
    remainder.push_back({want - static_cast<double>(n[c]), c});
  }
  std::stable_sort(remainder.begin(), remainder.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t j = 0; given < count; ++j, ++given) ++n[remainder[j % remainder.size()].second];
  std::vector<int32_t> labels;
  for (size_t c = 0; c < n.size(); ++c) labels.insert(labels.end(), static_cast<size_t>(n[c]), static_cast<int32_t>(c));
  std::mt19937_64 rng = pattern_rng(seed, -1, 4);
  std::shuffle(labels.begin(), labels.end(), rng);
  return labels;
}

/// The gap (zero rows and columns through the middle) and the hot pixels
/// (seeded places outside the gap, 100 to 300 times the brightest value of
/// the set, drawn anew in every frame) written into the images, and their
/// CXI bits into out.pixel_mask.
void add_detector_defects(const DiffractionParams& p, DiffractionImages& out) {
  if (p.hot_pixels == 0 && p.gap == 0) return;
  constexpr uint32_t kInvalid = 1, kHot = 4;  // CXI pixel-mask bits (mask.h)
  const int64_t S = p.size;
  out.pixel_mask.assign(static_cast<size_t>(S * S), 0);
  const int64_t gap_start = (S - p.gap) / 2;
  auto in_gap = [&](int64_t i) { return i >= gap_start && i < gap_start + p.gap; };
  std::vector<int64_t> good;
  for (int64_t r = 0; r < S; ++r)
    for (int64_t c = 0; c < S; ++c) {
      if (in_gap(r) || in_gap(c)) out.pixel_mask[static_cast<size_t>(r * S + c)] |= kInvalid;
      else
        good.push_back(r * S + c);
    }
  std::mt19937_64 rng = pattern_rng(p.seed, -1, 6);
  std::shuffle(good.begin(), good.end(), rng);
  good.resize(static_cast<size_t>(p.hot_pixels));
  for (int64_t k : good) out.pixel_mask[static_cast<size_t>(k)] |= kHot;
  const float brightest = std::max(1.0f, *std::max_element(out.images.begin(), out.images.end()));
  std::uniform_real_distribution<float> gain(100.0f, 300.0f);
  for (int64_t i = 0; i < out.count; ++i) {
    float* image = out.images.data() + i * S * S;
    for (int64_t k = 0; k < S * S; ++k)
      if (out.pixel_mask[static_cast<size_t>(k)] & kInvalid) image[k] = 0.0f;
    for (int64_t k : good) image[k] = brightest * gain(rng);
  }
}

/// Mean background photons per pixel: exp(-|q|^2 / (2 (q_max/2)^2)) scaled to
/// `photons` over the detector (zeros when photons = 0).
std::vector<double> background_profile(const std::vector<double>& q1, double q_max, double photons) {
  const size_t S = q1.size();
  std::vector<double> b(S * S, 0.0);
  if (photons <= 0) return b;
  const double sigma = q_max / 2;
  double sum = 0;
  for (size_t r = 0; r < S; ++r)
    for (size_t c = 0; c < S; ++c)
      sum += b[r * S + c] = std::exp(-(q1[r] * q1[r] + q1[c] * q1[c]) / (2 * sigma * sigma));
  for (double& v : b) v *= photons / sum;
  return b;
}

struct ElementGroup {
  const CromerMann* ff;
  std::vector<std::array<double, 3>> r;  // centred coordinates
  std::vector<double> occupancy;
};

}  // namespace

const std::vector<std::string>& hit_class_names() {
  static const std::vector<std::string> names = {"blank", "single", "double"};
  return names;
}

std::vector<double> parse_mix(const std::string& text) {
  const auto& names = hit_class_names();
  std::vector<double> f(names.size(), 0.0);
  std::vector<bool> seen(names.size(), false);
  const std::string usage = " (e.g. --mix blank=0.3,single=0.5,double=0.2)";
  for (size_t b = 0; b <= text.size();) {
    const size_t e = std::min(text.find(',', b), text.size());
    const std::string item = text.substr(b, e - b);
    b = e + 1;
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const auto it = std::find(names.begin(), names.end(), name);
    if (eq == std::string::npos || it == names.end())
      throw UsageError("--mix: '" + item + "' is not CLASS=FRACTION with CLASS blank, single or double" + usage);
    const size_t c = static_cast<size_t>(it - names.begin());
    if (seen[c]) throw UsageError("--mix: " + name + " given twice");
    seen[c] = true;
    const std::string value = item.substr(eq + 1);
    char* end = nullptr;
    f[c] = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !(f[c] >= 0 && f[c] <= 1))
      throw UsageError("--mix: " + name + "=" + value + ": the fraction must be a number in [0, 1]");
  }
  double sum = 0;
  for (double x : f) sum += x;
  if (std::abs(sum - 1) > 1e-6)
    throw UsageError("--mix: the fractions sum to " + printable_number(sum) + ", not 1" + usage);
  return f;
}

void validate(const DiffractionParams& p) {
  if (p.count < 1) throw UsageError("--count " + std::to_string(p.count) + ": must be at least 1");
  if (p.size < 2 || p.size > 4096)
    throw UsageError("--size " + std::to_string(p.size) + ": must be between 2 and 4096");
  if (p.axis != "x" && p.axis != "y" && p.axis != "z" && p.axis != "random")
    throw UsageError("--axis: unknown axis '" + p.axis + "' (x, y, z, random)");
  if (!(p.photons >= 0) || !std::isfinite(p.photons)) throw UsageError("--photons: must be >= 0 (0 = no noise)");
  if (!(p.q_max > 0) || !std::isfinite(p.q_max)) throw UsageError("--q-max: must be positive (1/Angstrom)");
  if (p.threads < 0) throw UsageError("--threads: must be >= 0");
  if (!p.mix.empty() && p.mix.size() != hit_class_names().size())
    throw UsageError("--mix: needs a fraction for each of blank, single, double");
  if (!(p.background >= 0) || !std::isfinite(p.background)) throw UsageError("--background: must be >= 0 photons");
  if (p.background > 0 && p.photons == 0) throw UsageError("--background: needs Poisson noise (--photons > 0)");
  if (!(p.fluence_jitter >= 0) || !std::isfinite(p.fluence_jitter))
    throw UsageError("--fluence-jitter: must be >= 0 (relative spread of the fluence)");
  if (p.fluence_jitter > 0 && p.photons == 0) throw UsageError("--fluence-jitter: needs Poisson noise (--photons > 0)");
  if (p.gap < 0 || p.gap > p.size - 1)
    throw UsageError("--gap " + std::to_string(p.gap) + ": must be from 0 to " + std::to_string(p.size - 1) +
                     " (rows and columns of the " + std::to_string(p.size) + "-pixel detector)");
  const int64_t outside_gap = static_cast<int64_t>(p.size - p.gap) * (p.size - p.gap);
  if (p.hot_pixels < 0 || p.hot_pixels >= outside_gap)
    throw UsageError("--hot-pixels " + std::to_string(p.hot_pixels) + ": must be from 0 to " +
                     std::to_string(outside_gap - 1) + " (the pixels outside the gap, one left valid)");
  const double bytes = static_cast<double>(p.count) * p.size * p.size * 4;
  if (bytes > 64.0 * (1ull << 30))
    throw UsageError("--count x --size^2: " + std::to_string(bytes / (1ull << 30)) + " GiB of images is too many");
}

namespace {

/// A molecule's atoms grouped by element, centred on their mean position (a
/// translation only changes the phase, but small coordinates keep the phases
/// accurate), and the largest distance of an atom from that centre.
struct CentredMolecule {
  std::map<std::string, ElementGroup> groups;
  double radius = 0;
};

CentredMolecule group_atoms_by_element(const Molecule& mol) {
  double cx = 0, cy = 0, cz = 0;
  for (auto& a : mol.atoms) cx += a.x, cy += a.y, cz += a.z;
  cx /= mol.atoms.size(), cy /= mol.atoms.size(), cz /= mol.atoms.size();
  CentredMolecule m;
  for (auto& a : mol.atoms) {
    const CromerMann* ff = cromer_mann(a.element);
    if (!ff)
      throw Error(mol.source + ": element '" + a.element + "' (atom " + a.name + " " + a.residue +
                  ") has no Cromer-Mann coefficients in the table");
    auto& g = m.groups[ff->element];
    g.ff = ff;
    g.r.push_back({a.x - cx, a.y - cy, a.z - cz});
    g.occupancy.push_back(a.occupancy);
    m.radius = std::max(m.radius,
                        std::sqrt((a.x - cx) * (a.x - cx) + (a.y - cy) * (a.y - cy) + (a.z - cz) * (a.z - cz)));
  }
  return m;
}

/// q of each detector row (= column): S values centred on 0, dq apart.
std::vector<double> detector_q(int S, double dq) {
  std::vector<double> q1(static_cast<size_t>(S));
  for (int i = 0; i < S; ++i) q1[static_cast<size_t>(i)] = (i - (S - 1) / 2.0) * dq;
  return q1;
}

/// The form factor of each element group at every pixel, S x S (row = q_y,
/// column = q_x), in the groups' order.
std::vector<Eigen::MatrixXd> form_factor_maps(const std::map<std::string, ElementGroup>& groups,
                                              const std::vector<double>& q1) {
  const int S = static_cast<int>(q1.size());
  std::vector<Eigen::MatrixXd> ffmap;
  for (auto& [name, g] : groups) {
    Eigen::MatrixXd f(S, S);
    for (int r = 0; r < S; ++r)
      for (int c = 0; c < S; ++c) {
        const double q = std::hypot(q1[static_cast<size_t>(c)], q1[static_cast<size_t>(r)]);
        f(r, c) = (*g.ff)(q / (4 * M_PI));
      }
    ffmap.push_back(std::move(f));
  }
  return ffmap;
}

/// p.count rotations (quaternions, w >= 0) from one stream of its own
/// (`role`), so they do not depend on threads: uniform in SO(3) for a random
/// axis, else uniform angles about the axis (written to `angles` if given).
void draw_orientations(const DiffractionParams& p, uint64_t role, std::vector<double>& quaternions,
                       std::vector<double>* angles) {
  std::mt19937_64 rng = pattern_rng(p.seed, -1, role);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < p.count; ++i) {
    double w, x = 0, y = 0, z = 0;
    if (p.axis == "random") {
      // Shoemake: uniform on the unit 3-sphere = uniform rotations.
      const double u1 = u(rng), u2 = 2 * M_PI * u(rng), u3 = 2 * M_PI * u(rng);
      w = std::sqrt(u1) * std::cos(u3);
      x = std::sqrt(1 - u1) * std::sin(u2);
      y = std::sqrt(1 - u1) * std::cos(u2);
      z = std::sqrt(u1) * std::sin(u3);
    } else {
      const double angle = 2 * M_PI * u(rng);
      if (angles) (*angles)[static_cast<size_t>(i)] = angle;
      w = std::cos(angle / 2);
      const double s = std::sin(angle / 2);
      (p.axis == "x" ? x : p.axis == "y" ? y : z) = s;
    }
    if (w < 0) w = -w, x = -x, y = -y, z = -z;
    double* q = quaternions.data() + i * 4;
    q[0] = w, q[1] = x, q[2] = y, q[3] = z;
  }
}

/// |A(R)|^2 of one molecule in rotation `qt`, S x S row-major, added to img.
void add_intensity(const CentredMolecule& mol, const std::vector<Eigen::MatrixXd>& ffmap, const std::vector<double>& q1,
                   const double* qt, double* img) {
  const int S = static_cast<int>(q1.size());
  const Mat3 R = quaternion_matrix(qt[0], qt[1], qt[2], qt[3]);
  Eigen::MatrixXcd amp = Eigen::MatrixXcd::Zero(S, S);
  size_t gi = 0;
  for (auto& [name, g] : mol.groups) {
    const Eigen::Index na = static_cast<Eigen::Index>(g.r.size());
    // Y (S x atoms) = exp(i q_y y'), X (atoms x S) = o exp(i q_x x').
    Eigen::MatrixXcd Y(S, na), X(na, S);
    for (Eigen::Index j = 0; j < na; ++j) {
      const auto& r = g.r[static_cast<size_t>(j)];
      const double xr = R[0][0] * r[0] + R[0][1] * r[1] + R[0][2] * r[2];
      const double yr = R[1][0] * r[0] + R[1][1] * r[1] + R[1][2] * r[2];
      const double o = g.occupancy[static_cast<size_t>(j)];
      for (int k = 0; k < S; ++k) {
        const double qk = q1[static_cast<size_t>(k)];
        Y(k, j) = std::polar(1.0, qk * yr);
        X(j, k) = std::polar(o, qk * xr);
      }
    }
    amp.array() += ffmap[gi].array() * (Y * X).array();
    ++gi;
  }
  for (int r = 0; r < S; ++r)
    for (int c = 0; c < S; ++c) img[r * S + c] += std::norm(amp(r, c));
}

/// The noise-free patterns, count x S x S, and each one's total intensity.
struct Intensities {
  std::vector<double> images;
  std::vector<double> totals;
};

/// Every pattern's |A|^2: one molecule in its orientation (`first`), a
/// second one (`second`) for a double hit, none for a blank.
Intensities pattern_intensities(const DiffractionParams& p, const CentredMolecule& mol,
                                const std::vector<Eigen::MatrixXd>& ffmap, const std::vector<double>& q1,
                                const std::vector<double>& first, const std::vector<double>& second,
                                const std::function<int(int64_t)>& molecules, Progress& progress) {
  const int64_t S = static_cast<int64_t>(q1.size());
  Intensities in;
  in.totals.resize(static_cast<size_t>(p.count));
  in.images.resize(static_cast<size_t>(p.count * S * S));
  progress.stage("diffraction", static_cast<uint64_t>(p.count), "patterns");
  parallel_for(0, p.count, p.threads, [&](int64_t i) {
    double* img = in.images.data() + i * S * S;
    const int m = molecules(i);
    if (m >= 1) add_intensity(mol, ffmap, q1, first.data() + i * 4, img);
    if (m >= 2) add_intensity(mol, ffmap, q1, second.data() + i * 4, img);
    double total = 0;
    for (int64_t k = 0; k < S * S; ++k) total += img[k];
    in.totals[static_cast<size_t>(i)] = total;
    progress.advance(1);
  });
  progress.finish();
  return in;
}

/// Shot-to-shot fluence per pattern: log-normal, mean 1, relative spread
/// p.fluence_jitter (all 1 without jitter).
std::vector<double> shot_fluences(const DiffractionParams& p) {
  std::vector<double> fluence(static_cast<size_t>(p.count), 1.0);
  if (p.fluence_jitter > 0) {
    std::mt19937_64 rng = pattern_rng(p.seed, -1, 5);
    const double sigma = std::sqrt(std::log1p(p.fluence_jitter * p.fluence_jitter));
    std::normal_distribution<double> g(-sigma * sigma / 2, sigma);
    for (double& f : fluence) f = std::exp(g(rng));
  }
  return fluence;
}

/// out.images from the intensities: Poisson counts of fluence x (scale x
/// intensity + background) with p.photons > 0 (a stream per pattern, so
/// they do not depend on threads), else the intensities themselves.
void count_photons(const DiffractionParams& p, const std::vector<double>& intensity, const std::vector<double>& q1,
                   DiffractionImages& out, Progress& progress) {
  if (p.photons <= 0) {
    for (size_t k = 0; k < intensity.size(); ++k) out.images[k] = static_cast<float>(intensity[k]);
    return;
  }
  const int64_t S = static_cast<int64_t>(q1.size());
  const std::vector<double> background = background_profile(q1, p.q_max, p.background);
  const std::vector<double> fluence = shot_fluences(p);
  progress.stage("poisson noise", static_cast<uint64_t>(p.count), "patterns");
  parallel_for(0, p.count, p.threads, [&](int64_t i) {
    std::mt19937_64 rng = pattern_rng(p.seed, i, 2);
    for (int64_t k = 0; k < S * S; ++k) {
      const double mean = fluence[static_cast<size_t>(i)] * (out.scale * intensity[static_cast<size_t>(i * S * S + k)] +
                                                             background[static_cast<size_t>(k)]);
      float v = 0;
      if (mean > 0) v = static_cast<float>(std::poisson_distribution<int64_t>(mean)(rng));
      out.images[static_cast<size_t>(i * S * S + k)] = v;
    }
    progress.advance(1);
  });
  progress.finish();
}

/// Every parameter, the molecule and the atoms used: the set's JSON.
nlohmann::json diffraction_metadata(const Molecule& mol, const CentredMolecule& centred, const DiffractionParams& p,
                                    const DiffractionImages& out, double dq, double seconds) {
  nlohmann::json atoms = nlohmann::json::object();
  for (auto& [name, g] : centred.groups) atoms[name] = g.r.size();
  nlohmann::json meta = {{"format", "manifold-diffraction"},
                         {"version", 1},
                         {"model",
                          "small-angle flat detector, I(q) = |sum_j o_j f_j(|q|) exp(i q.r_j)|^2, Cromer-Mann f"},
                         {"pdb", mol.source},
                         {"pdb_id", mol.id},
                         {"atoms", mol.atoms.size()},
                         {"atoms_by_element", atoms},
                         {"molecule_radius_A", centred.radius},
                         {"count", p.count},
                         {"size", p.size},
                         {"axis", p.axis},
                         {"photons", p.photons},
                         {"photons_per_unit_intensity", out.scale},
                         {"seed", p.seed},
                         {"background_photons", p.background},
                         {"fluence_jitter", p.fluence_jitter},
                         {"hot_pixels", p.hot_pixels},
                         {"gap", p.gap},
                         {"q_max_per_A", p.q_max},
                         {"pixel_q_per_A", dq},
                         {"resolution_A", 2 * M_PI / p.q_max},
                         {"seconds", seconds}};
  if (!p.mix.empty()) {
    meta["mix"] = nlohmann::json::object();
    for (size_t c = 0; c < p.mix.size(); ++c) meta["mix"][hit_class_names()[c]] = p.mix[c];
    meta["classes"] = hit_class_names();
    meta["photons_are_per"] = "molecule";
  }
  return meta;
}

}  // namespace

DiffractionImages simulate_diffraction(const Molecule& mol, const DiffractionParams& p, Progress& progress) {
  validate(p);
  if (mol.atoms.empty()) throw Error(mol.source + ": the molecule has no atoms");
  const auto t0 = std::chrono::steady_clock::now();
  const int S = p.size;
  const CentredMolecule centred = group_atoms_by_element(mol);
  const double dq = 2 * p.q_max / S;
  const std::vector<double> q1 = detector_q(S, dq);
  const std::vector<Eigen::MatrixXd> ffmap = form_factor_maps(centred.groups, q1);

  DiffractionImages out;
  out.count = p.count;
  out.size = S;
  out.axis = p.axis;
  out.images.resize(static_cast<size_t>(p.count * S * S));
  out.quaternions.resize(static_cast<size_t>(p.count * 4));
  if (p.axis != "random") out.angles.resize(static_cast<size_t>(p.count));
  // Orientations first (cheap), so they do not depend on threads.
  draw_orientations(p, 1, out.quaternions, &out.angles);
  // A mix: classes with exact counts (largest remainders), shuffled; the
  // second molecules of double hits from their own stream.
  std::vector<double> second;
  if (!p.mix.empty()) {
    out.labels = hit_labels(p.mix, p.count, p.seed);
    second.resize(out.quaternions.size());
    draw_orientations(p, 3, second, nullptr);
  }
  auto molecules = [&](int64_t i) { return out.labels.empty() ? 1 : out.labels[static_cast<size_t>(i)]; };
  const Intensities intensity = pattern_intensities(p, centred, ffmap, q1, out.quaternions, second, molecules,
                                                    progress);

  // One fluence for all patterns: `photons` on average per molecule (per
  // pattern without a mix).
  double mean_total = 0, molecule_count = 0;
  for (int64_t i = 0; i < p.count; ++i)
    mean_total += intensity.totals[static_cast<size_t>(i)], molecule_count += molecules(i);
  mean_total /= std::max(1.0, molecule_count);
  out.scale = p.photons > 0 && mean_total > 0 ? p.photons / mean_total : 0;
  count_photons(p, intensity.images, q1, out, progress);
  add_detector_defects(p, out);
  out.metadata = diffraction_metadata(mol, centred, p, out, dq,
                                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

}  // namespace manifold

namespace manifold {

void anscombe_transform(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = 2.0f * std::sqrt(std::max(v[i], 0.0f) + 0.375f);
}

namespace {

/// The steps of a transform name: "none" has none, otherwise '+'-separated
/// "anscombe" or "binB" (B >= 2). UsageError naming the transform otherwise.
std::vector<std::string> transform_steps(const std::string& transform) {
  const std::string known = " (none, anscombe, binB, or steps joined by '+', e.g. bin8+anscombe)";
  if (transform == "none") return {};
  std::vector<std::string> steps;
  for (size_t b = 0; b <= transform.size();) {
    const size_t e = std::min(transform.find('+', b), transform.size());
    steps.push_back(transform.substr(b, e - b));
    b = e + 1;
  }
  for (const std::string& step : steps) {
    if (step == "anscombe") continue;
    const bool digits = step.size() > 3 && step.size() <= 7 &&
                        step.find_first_not_of("0123456789", 3) == std::string::npos;
    if (step.rfind("bin", 0) == 0 && digits && std::stoi(step.substr(3)) >= 2) continue;
    throw UsageError("--transform: unknown transform '" + transform + "'" + known);
  }
  return steps;
}

/// b x b blocks of pixels summed into one: the counts a detector with b
/// times larger pixels would record (photon counts stay Poisson).
Dataset binned(const Dataset& ds, int b) {
  if (ds.item_shape.size() != 2)
    throw UsageError("--transform bin" + std::to_string(b) + ": " + ds.source + " holds vectors, not images");
  const int64_t h = ds.item_shape[0], w = ds.item_shape[1];
  if (h % b != 0 || w % b != 0)
    throw UsageError("--transform bin" + std::to_string(b) + ": " + ds.source + " has " + std::to_string(h) + " x " +
                     std::to_string(w) + " images, not divisible by " + std::to_string(b));
  const int64_t bh = h / b, bw = w / b;
  std::vector<float> v(static_cast<size_t>(ds.rows() * bh * bw), 0.0f);
  for (int64_t i = 0; i < ds.rows(); ++i) {
    const float* in = ds.data() + i * ds.cols();
    float* out = v.data() + i * bh * bw;
    for (int64_t r = 0; r < h; ++r)
      for (int64_t c = 0; c < w; ++c) out[(r / b) * bw + c / b] += in[r * w + c];
  }
  Dataset t(ds.rows(), bh * bw, std::move(v));
  t.item_shape = {bh, bw};
  return t;
}

}  // namespace

void validate_transform(const std::string& transform) { transform_steps(transform); }

Dataset transformed(const Dataset& ds, const std::string& transform) {
  const std::vector<std::string> steps = transform_steps(transform);
  if (steps.empty()) return ds;
  Dataset t = ds;
  for (const std::string& step : steps) {
    if (step == "anscombe") {
      std::vector<float> v(t.data(), t.data() + t.rows() * t.cols());
      anscombe_transform(v.data(), static_cast<int64_t>(v.size()));
      Dataset a(t.rows(), t.cols(), std::move(v));
      a.item_shape = t.item_shape;
      t = std::move(a);
    } else {
      t = binned(t, std::stoi(step.substr(3)));
    }
    t.source = ds.source;
  }
  t.format = ds.format;
  t.source_dtype = ds.source_dtype;
  t.labels = ds.labels;
  t.item_names = ds.item_names;
  return t;
}

DetectorMask transformed_mask(const DetectorMask& mask, const std::string& transform) {
  DetectorMask m = mask;
  if (m.empty()) return m;
  for (const std::string& step : transform_steps(transform)) {
    if (step == "anscombe") continue;  // pixel by pixel: the mask stays
    // A bin is valid only when all its pixels are (transformed() checked the divisibility).
    const int b = std::stoi(step.substr(3));
    if (m.shape.size() != 2 || m.shape[0] % b != 0 || m.shape[1] % b != 0)
      throw UsageError("--transform " + step + ": the mask " + m.source + " does not bin by " + std::to_string(b));
    const int64_t h = m.shape[0], w = m.shape[1], bh = h / b, bw = w / b;
    std::vector<uint8_t> valid(static_cast<size_t>(bh * bw), 1);
    for (int64_t r = 0; r < h; ++r)
      for (int64_t c = 0; c < w; ++c)
        if (!m.valid[static_cast<size_t>(r * w + c)]) valid[static_cast<size_t>((r / b) * bw + c / b)] = 0;
    m.valid = std::move(valid);
    m.shape = {bh, bw};
  }
  return m;
}

}  // namespace manifold
