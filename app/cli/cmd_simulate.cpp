// manifold simulate diffraction: snapshots of a molecule from a PDB file.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include "cli/commands.h"
#include "manifold/error.h"
#include "manifold/output.h"
#include "manifold/pdb.h"
#include "manifold/simulate.h"
#include "manifold/terminal_progress.h"

namespace manifold::cli {

namespace {

/// --pdb takes a file, or a bare PDB id ("1ubq") found among the packaged structures.
std::string resolve_pdb(const std::string& value) {
  if (std::filesystem::exists(value)) return value;
  if (std::regex_match(value, std::regex("[0-9][A-Za-z0-9]{3}"))) {
    std::string id = value;
    for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return find_packaged_pdb(id);
  }
  throw Error(value + ": cannot open PDB file (no such file)");
}

}  // namespace

int cmd_simulate(int argc, char** argv) {
  // `simulate --help` is the help of its one kind.
  const bool help = argc >= 3 && (!std::strcmp(argv[2], "--help") || !std::strcmp(argv[2], "-h"));
  if (!help && (argc < 3 || std::strcmp(argv[2], "diffraction") != 0))
    throw UsageError(std::string("simulate: unknown kind '") + (argc < 3 ? "" : argv[2]) +
                     "' (usage: manifold simulate diffraction --pdb FILE --count N -o FILE.npy|FILE.cxi)");
  const DiffractionParams defaults;
  Args a("simulate diffraction", "Diffraction patterns of a molecule in random or rotating orientations.",
         {value("--pdb", "FILE|ID", "the molecule: a PDB file, or the id of a packaged structure (1ubq)"),
          value("--count", "N", "patterns"), value("--size", "S", "S x S pixels", std::to_string(defaults.size)),
          value("--axis", "x|y|z|random", "the rotation axis (z: the beam; random: uniform in SO(3))", defaults.axis),
          value("--photons", "P", "mean photons per pattern (0: no noise)", "1e5"),
          value("--seed", "S", "random seed", "1"),
          value("--q-max", "Q", "1/Angstrom at the middle of the detector's edge", "0.6"),
          value("--threads", "T", "CPU threads (0: every core)", "0"),
          value("--mix", "blank=F,single=F,double=F",
                "fractions of blank, single and double hits (default: all single)"),
          value("--background", "P", "mean background photons per pattern", "0"),
          value("--fluence-jitter", "J", "relative shot-to-shot spread of the fluence", "0"),
          value("--hot-pixels", "N", "pixels far brighter than any, with their mask", "0"),
          value("--gap", "W", "zero rows and columns through the middle, with their mask", "0"),
          flag("--keep-water", "keep the PDB file's water molecules"),
          value("-o,--output", "FILE.npy|FILE.cxi", "the patterns, with the ground truth beside them or inside"),
          flag("--quiet,-q", "no progress and no summary")},
         argc, argv, help ? 2 : 3);
  if (!a.positionals().empty())
    throw UsageError("simulate diffraction: unexpected argument '" + a.positionals()[0] + "'");
  if (!a.has("--pdb"))
    throw UsageError("simulate diffraction: missing --pdb FILE (e.g. --pdb 1ubq with freesasa installed)");
  if (!a.has("--count")) throw UsageError("simulate diffraction: missing --count N");
  if (!a.has("-o")) throw UsageError("simulate diffraction: missing -o FILE.npy|FILE.cxi");
  const std::string out = a.str("-o");
  check_output_file(out, {".npy", ".cxi"});  // before the simulation: a folder that takes no file fails now
  DiffractionParams p;
  p.count = a.integer("--count", 0, 1, INT64_MAX);
  p.size = static_cast<int>(a.integer("--size", p.size, 2, 4096));
  p.axis = a.str("--axis", p.axis);
  p.photons = a.real("--photons", p.photons);
  p.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  p.q_max = a.real("--q-max", p.q_max);
  p.threads = static_cast<int>(a.integer("--threads", 0, 0, 4096));
  if (a.has("--mix")) p.mix = parse_mix(a.str("--mix"));
  p.background = a.real("--background", 0.0);
  p.fluence_jitter = a.real("--fluence-jitter", 0.0);
  p.hot_pixels = a.integer("--hot-pixels", 0, 0, INT64_MAX);
  p.gap = static_cast<int>(a.integer("--gap", 0, 0, 4096));
  validate(p);
  PdbOptions po;
  po.keep_water = a.has("--keep-water");
  Molecule mol = read_pdb(resolve_pdb(a.str("--pdb")), po);

  TerminalProgress sink(stderr, a.has("--quiet"));
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  DiffractionImages d = simulate_diffraction(mol, p, progress);
  progress.check_cancel();
  write_diffraction(out, d);
  if (!a.has("--quiet")) {
    std::string truth = out.ends_with(".cxi") ? "ground truth inside" : "+ " + ground_truth_path(out, d);
    if (!d.labels.empty() && !out.ends_with(".cxi"))
      truth += " + " + out.substr(0, out.size() - 4) + ".labels.npy (blank, single, double)";
    if (!d.pixel_mask.empty())
      truth += out.ends_with(".cxi") ? ", mask in /entry_1/data_1/mask" : " + " + mask_path(out) + " (1 = valid)";
    std::printf("simulated %lld patterns %dx%d of %s (%zu atoms), axis %s, %s in %.2f s -> %s (%s)\n",
                static_cast<long long>(d.count), d.size, d.size, mol.id.empty() ? mol.source.c_str() : mol.id.c_str(),
                mol.atoms.size(), p.axis.c_str(),
                p.photons > 0
                    ? ("Poisson noise, " + std::to_string(static_cast<long long>(p.photons)) + " photons/pattern")
                          .c_str()
                    : "no noise",
                d.metadata.value("seconds", 0.0), out.c_str(), truth.c_str());
  }
  return 0;
}

}  // namespace manifold::cli
