#pragma once
#include "manifold/dataset.h"
#include "manifold/mask.h"
// Single-molecule diffraction snapshots, for demos and physical validation.
//
// Small-angle (flat detector) approximation: the detector samples the plane
// q_z = 0 of reciprocal space on an S x S grid, q = 4 pi sin(theta) / lambda
// in 1/Angstrom, pixel centres at q = (i - (S-1)/2) * 2 q_max / S. The
// molecule (rotation R) scatters I(q) = |sum_j o_j f_j(|q|) exp(i q . R r_j)|^2
// with Cromer-Mann form factors f_j(s) = sum_i a_i exp(-b_i s^2) + c,
// s = |q| / (4 pi), and occupancies o_j. Rotations are about one axis
// (angle uniform in [0, 2 pi)) or uniform in SO(3) (Shoemake quaternions).
// Poisson noise: one fluence for the whole set, scaled so that a pattern
// holds `photons` photons on average; each pixel is Poisson(scale * I).
// Mixed sets (hit classification): blanks hold only the background; a
// double hit is two molecules far apart in independent orientations, whose
// interference fringes are much finer than a pixel and average out, so
// I = I(R1) + I(R2); `photons` is then the mean per molecule.
//
// simulate_diffraction() is the compute boundary: a GPU version can be added
// behind the same signature.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/pdb.h"
#include "manifold/progress.h"

namespace manifold {

/// Cromer-Mann coefficients of one element (International Tables for
/// Crystallography, Vol. C, Table 6.1.1.4), f in electrons, s in 1/Angstrom.
struct CromerMann {
  const char* element;
  double a[4];
  double b[4];
  double c;
  double operator()(double s) const;
};

/// The coefficients for `element` ("Fe", "FE" and "fe" all work), or nullptr.
const CromerMann* cromer_mann(const std::string& element);
/// Every element of the table.
const std::vector<CromerMann>& cromer_mann_table();

struct DiffractionParams {
  int64_t count = 1000;    ///< patterns
  int size = 32;           ///< S: patterns are S x S pixels
  std::string axis = "y";  ///< rotation axis x | y | z (z = the beam) | random (uniform in SO(3))
  double photons = 1e5;    ///< mean photons per pattern; 0 = no noise (raw |A|^2 in electrons^2)
  uint64_t seed = 1;
  double q_max = 0.6;  ///< 1/Angstrom at the middle of the detector's edge (resolution 2 pi / q_max)
  int threads = 0;     ///< 0 = all cores
  /// Fractions of blank, single and double hits (hit_class_names order);
  /// empty = every pattern a single hit. See parse_mix().
  std::vector<double> mix;
  /// Mean background photons per pattern (needs photons > 0), added to every
  /// pattern as a smooth profile exp(-|q|^2 / (2 (q_max/2)^2)): what a blank holds.
  double background = 0;
  /// Relative spread (standard deviation / mean) of the fluence from shot to
  /// shot, log-normal with mean 1, applied to molecule and background alike:
  /// pulse energy and the particle's place in the focus vary. 0 = none.
  double fluence_jitter = 0;
  /// Detector defects, for testing masks: `hot_pixels` pixels (seeded, away
  /// from the gap) that read 100 to 300 times the brightest value of the set,
  /// differently in every frame, and a gap of `gap` rows and `gap` columns
  /// through the middle (between four panels) that reads 0. The pixel mask
  /// marks both (DiffractionImages::pixel_mask).
  int64_t hot_pixels = 0;
  int gap = 0;
};

/// The classes of a mixed set, in label order: blank (background only),
/// single (one molecule), double (two in independent orientations).
const std::vector<std::string>& hit_class_names();

/// "blank=0.3,single=0.5,double=0.2" -> {0.3, 0.5, 0.2}; classes not named
/// are 0; the fractions must be >= 0 and sum to 1. UsageError naming --mix.
std::vector<double> parse_mix(const std::string& text);

/// Rejects bad parameters with one line (UsageError).
void validate(const DiffractionParams& params);

struct DiffractionImages {
  int64_t count = 0;
  int size = 0;
  std::vector<float> images;  ///< count x size x size, row-major; row index = q_y, column = q_x
  std::string axis;
  std::vector<double> angles;       ///< count rotation angles (radians) for an axis; empty for random
  std::vector<double> quaternions;  ///< count x 4 (w, x, y, z), w >= 0, of every rotation (the first molecule's)
  std::vector<int32_t> labels;      ///< with a mix: count hit classes (index into hit_class_names()); else empty
  double scale = 0;                 ///< photons per unit |A|^2 (0 without noise)
  /// With detector defects: size x size CXI pixel-mask bits (4 = hot, 1 =
  /// invalid: the gap; 0 = a good pixel); empty for a perfect detector.
  std::vector<uint32_t> pixel_mask;
  nlohmann::json metadata;  ///< every parameter, the molecule, atoms used
};

/// The compute boundary (CPU, multi-threaded). Progress counts patterns; cancellable.
DiffractionImages simulate_diffraction(const Molecule& molecule, const DiffractionParams& params, Progress& progress);

/// Writes FILE.npy (float32 N x S x S) with FILE.angles.npy (axis) or
/// FILE.quaternions.npy (random) and FILE.json beside it, or FILE.cxi (HDF5,
/// CXI layout: /entry_1/data_1/data N x S x S float32, ground truth under
/// /entry_1/sample_1). With detector defects also the mask: FILE.mask.npy
/// (uint8, 1 = valid) or /entry_1/data_1/mask (uint32 CXI bits, linked under
/// the detector). All files appear together or not at all.
void write_diffraction(const std::string& path, const DiffractionImages& images);

/// The mask file written beside FILE.npy with detector defects: FILE.mask.npy.
std::string mask_path(const std::string& npy_path);

/// The ground-truth file written beside FILE.npy: FILE.angles.npy or FILE.quaternions.npy.
std::string ground_truth_path(const std::string& npy_path, const DiffractionImages& images);

/// Folders searched for a PDB id, in order: MANIFOLD_PDB_PATH (':'-separated;
/// when set it replaces the system folders), the structures bundled with
/// Manifold (resources/pdb, found from the executable's folder: installed
/// under PREFIX/share/manifold/pdb or in a build folder of the source tree),
/// then Debian's freesasa test data.
std::vector<std::string> pdb_search_path();

/// ID.pdb ("1ubq") from the first folder of pdb_search_path() holding it;
/// throws Error naming the folders searched when none does.
std::string find_packaged_pdb(const std::string& id);

}  // namespace manifold

namespace manifold {

/// Anscombe's variance-stabilising transform 2 sqrt(x + 3/8): Poisson counts
/// of any mean get unit variance, so Euclidean distances weigh every pixel by
/// its information instead of letting the bright centre's noise dominate.
void anscombe_transform(float* values, int64_t count);

/// `ds` with a named transform applied: "none" returns it unchanged;
/// otherwise steps joined by '+' and applied left to right, each "anscombe"
/// or "binB" (B x B blocks of pixels summed, for images whose sides B
/// divides). A copy keeping the metadata; UsageError naming the problem.
///
/// Why binB+anscombe for sparse photons: with well under one photon per pixel
/// the Anscombe transform is far from variance-stabilising and the distances
/// are noise; summing blocks no larger than a speckle keeps the signal and
/// brings the counts to where the transform works (bench/physics/RESULTS.md).
Dataset transformed(const Dataset& ds, const std::string& transform);

/// Checks a transform name without data (before loading); UsageError if unknown.
void validate_transform(const std::string& transform);

/// The mask of frames after `transform`: binB keeps a bin only when all its
/// pixels are valid; Anscombe keeps the mask (see mask.h).
DetectorMask transformed_mask(const DetectorMask& mask, const std::string& transform);

}  // namespace manifold
