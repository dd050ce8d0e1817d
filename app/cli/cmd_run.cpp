// manifold run: the whole pipeline (k-NN graph, then diffusion map) from a
// dataset, from the built-in demo (simulated diffraction), or from a saved
// session.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/embed_common.h"
#include "manifold/dataset.h"
#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/mask.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/pdb.h"
#include "manifold/session.h"
#include "manifold/simulate.h"
#include "manifold/step_clock.h"
#include "manifold/terminal_progress.h"

namespace fs = std::filesystem;

namespace manifold::cli {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Graph files into an open transaction (write_graph commits on its own).
void add_graph_files(OutputTransaction& tx, const KnnGraph& g) {
  npy::write(tx.path("indices.npy"), g.indices.data(), {g.n, g.k});
  npy::write(tx.path("distances.npy"), g.distances.data(), {g.n, g.k});
  write_text_file(tx.path("graph.json"), graph_metadata(g).dump(2) + "\n");
}

/// The largest |Fisher-Lee correlation| of atan2(psi_2, psi_1) with the
/// angle, and with twice the angle (Friedel symmetry folds rotations about the beam).
std::pair<double, double> angle_recovery(const DiffusionResult& r, const std::vector<double>& angles) {
  if (r.m < 2) return {0, 0};
  std::vector<double> phi, once, twice;
  const int nev = r.m + 1;
  for (int64_t e = 0; e < r.n; ++e) {
    phi.push_back(std::atan2(r.psi[static_cast<size_t>(e * nev + 2)], r.psi[static_cast<size_t>(e * nev + 1)]));
    const double a = angles[static_cast<size_t>(r.point_index[static_cast<size_t>(e)])];
    once.push_back(a);
    twice.push_back(2 * a);
  }
  return {std::abs(circular_correlation(phi, once)), std::abs(circular_correlation(phi, twice))};
}

struct PipelineResult {
  KnnGraph graph;
  DiffusionResult embedding;
  double knn_s = 0;
};

/// k-NN graph then diffusion map; validates both parameter sets before the
/// long work. `clock` gets the steps "graph" and "embedding".
PipelineResult run_pipeline(const Dataset& ds, const KnnParams& kp, const std::string& backend_name,
                            const DiffusionParams& dp, Progress& progress, StepClock& clock) {
  validate(kp, ds.rows());
  validate(dp, ds.rows(), kp.k);  // before the long k-NN build, not after it
  auto backend = make_backend(backend_name);
  note_ignored_gpu_options(kp, backend->name());
  PipelineResult r;
  const auto t = Clock::now();
  r.graph = backend->build(ds, kp, progress);
  r.knn_s = seconds_since(t);
  progress.check_cancel();
  clock.lap("graph");
  r.embedding = diffusion_map(r.graph, dp, progress);
  progress.check_cancel();
  clock.lap("embedding");
  return r;
}

struct GraphInput {
  Dataset features;   ///< what the k-NN graph is built from
  DetectorMask mask;  ///< after the transform; empty = every pixel
};

/// The session's frames, transformed, then only the pixels valid under its
/// mask (mask.h): the transform sees whole frames, the graph the valid pixels.
GraphInput load_with_transform(const Session& s, Progress& progress, StepClock& clock) {
  ReadOptions ro;
  ro.hdf5_dataset = s.dataset;
  progress.stage("load", 1, "files");
  Dataset frames = load_dataset(s.data, ro);
  DetectorMask mask = mask_for(s.data, s.mask, frames);
  progress.finish();
  clock.lap("load");
  frames = transformed(frames, s.transform);
  mask = transformed_mask(mask, s.transform);
  Dataset features = masked_features(frames, mask);
  return {std::move(features), std::move(mask)};
}

/// Every file `run` writes (the demo: the patterns too): a folder holding
/// anything else is refused before the long work, unless --overwrite.
std::vector<std::string> run_files(bool demo) {
  std::vector<std::string> names = {"indices.npy",    "distances.npy",   "graph.json",    "eigenvalues.npy",
                                    "embedding.npy",  "point_index.npy", "embedding.csv", "embedding.vtp",
                                    "embedding.json", "session.json"};
  if (demo) names.insert(names.end(), {"patterns.npy", "patterns.angles.npy", "patterns.json"});
  return names;
}

int run_session(const Session& s, const std::string& out, const OutputOptions& output, bool quiet,
                const std::string& session_origin, const std::vector<std::string>& metadata_specs) {
  check_output_dir(out, run_files(false), output);
  TerminalProgress sink(stderr, quiet);
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  StepClock clock;
  const GraphInput input = load_with_transform(s, progress, clock);
  clock.lap("transform");
  const Dataset& ds = input.features;
  const MetadataTable metadata = load_metadata_for(metadata_specs, ds.rows(), s.data);  // before the long work
  clock.lap("metadata");
  PipelineResult r = run_pipeline(ds, s.knn, s.backend, s.diffusion, progress, clock);
  if (!r.graph.output_rank) return 0;
  if (!input.mask.empty()) r.graph.extra["mask"] = mask_json(input.mask);
  Session record = s;
  record.data = fs::absolute(s.data).lexically_normal().string();
  // The mask file used, found or named, so a replay reads the same one.
  if (!input.mask.empty()) record.mask = fs::absolute(input.mask.file).lexically_normal().string();
  record.output.clear();
  nlohmann::json extra = {{"data", record.data}, {"transform", s.transform}, {"knn_s", r.knn_s}};
  if (!session_origin.empty()) extra["session"] = session_origin;
  OutputTransaction tx(out, output);
  add_graph_files(tx, r.graph);
  clock.lap("write graph");
  write_text_file(tx.path("session.json"), session_to_json(record).dump(2) + "\n");
  clock.lap("write session");
  extra["command_timings_s"] = clock.json();
  Timings written;
  write_embedding_files(tx, r.embedding, s.diffusion, graph_metadata(r.graph), extra, &metadata, &written);
  clock.add(written);
  tx.commit();
  clock.lap("commit");
  report_warnings(r.embedding);
  if (!quiet) {
    if (!input.mask.empty()) std::printf("%s\n", mask_summary(input.mask).c_str());
    std::printf("k-NN graph: N=%lld d=%lld k=%d metric=%s backend=%s in %.3f s\n", static_cast<long long>(r.graph.n),
                static_cast<long long>(r.graph.d), r.graph.k, to_string(r.graph.metric).c_str(),
                r.graph.backend.c_str(), r.knn_s);
    print_summary(r.embedding, s.diffusion, out);
    print_metadata_summary(r.embedding, metadata);
    std::printf("%s\n", clock.summary().c_str());
  }
  return 0;
}

int run_demo(const Args& a, const std::vector<std::string>& metadata_specs) {
  const bool quiet = a.has("--quiet");
  const std::string out = a.str("-o");
  const OutputOptions output{.overwrite = a.has("--overwrite")};
  check_output_dir(out, run_files(true), output);
  DiffractionParams sp;
  sp.count = a.integer("--count", 2000, 3, INT64_MAX);
  sp.size = static_cast<int>(a.integer("--size", 32, 2, 4096));
  // About an axis in the detector plane: the patterns change in 3-D, not by
  // an in-plane rotation of the image as about the beam (z).
  sp.axis = a.str("--axis", "x");
  sp.photons = a.real("--photons", 1e5);
  sp.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  sp.q_max = a.real("--q-max", sp.q_max);
  sp.threads = static_cast<int>(a.integer("--threads", 0, 0, 4096));
  validate(sp);
  if (sp.axis == "random") throw UsageError("--axis random: the demo recovers one rotation angle; use x, y or z");
  KnnParams kp = knn_params_from(a);
  if (!a.has("-k")) kp.k = 20;
  DiffusionParams dp = diffusion_params_from(a, "--embed-k");
  if (!a.has("--components")) dp.components = 4;
  const std::string backend = a.str("--backend", "auto");
  const std::string pdb = a.has("--pdb") ? a.str("--pdb") : find_packaged_pdb("1ubq");
  Molecule mol = read_pdb(pdb);
  // The true rotation angle first (as patterns.angles.npy beside the
  // patterns holds it), then the user's columns.
  MetadataTable metadata = load_metadata_for(metadata_specs, sp.count, "");

  TerminalProgress sink(stderr, quiet);
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  StepClock clock;
  DiffractionImages d = simulate_diffraction(mol, sp, progress);
  // Photon counts are variance-stabilised before the graph (see anscombe_transform).
  std::vector<float> v = d.images;
  anscombe_transform(v.data(), static_cast<int64_t>(v.size()));
  Dataset ds(d.count, static_cast<int64_t>(d.size) * d.size, std::move(v));
  ds.source = "patterns.npy";
  ds.item_shape = {d.size, d.size};
  clock.lap("simulate");
  PipelineResult r = run_pipeline(ds, kp, backend, dp, progress, clock);
  auto [once, twice] = angle_recovery(r.embedding, d.angles);
  MetadataTable with_angle(d.count);
  MetadataColumn angle;
  angle.name = "angle";
  angle.kind = MetadataKind::Angle;
  angle.source = "patterns.angles.npy";
  angle.values = d.angles;
  with_angle.add(std::move(angle));
  for (const MetadataColumn& c : metadata.columns()) with_angle.add(c);
  metadata = std::move(with_angle);

  Session s;
  s.data = "patterns.npy";
  s.transform = "anscombe";
  s.backend = backend;
  s.knn = kp;
  s.diffusion = dp;
  nlohmann::json demo = {{"molecule", mol.id.empty() ? mol.source : mol.id},
                         {"patterns", d.count},
                         {"size", d.size},
                         {"axis", sp.axis},
                         {"photons", sp.photons},
                         {"circular_correlation_angle", once},
                         {"circular_correlation_twice_angle", twice},
                         {"simulation", d.metadata}};
  OutputTransaction tx(out, output);
  npy::write(tx.path("patterns.npy"), d.images.data(), {d.count, d.size, d.size});
  npy::write(tx.path("patterns.angles.npy"), d.angles.data(), {d.count});
  write_text_file(tx.path("patterns.json"), d.metadata.dump(2) + "\n");
  add_graph_files(tx, r.graph);
  clock.lap("write patterns and graph");
  write_text_file(tx.path("session.json"), session_to_json(s).dump(2) + "\n");
  clock.lap("write session");
  Timings written;
  write_embedding_files(tx, r.embedding, dp, graph_metadata(r.graph),
                        {{"data", "patterns.npy"},
                         {"transform", "anscombe"},
                         {"demo", demo},
                         {"command_timings_s", clock.json()}},
                        &metadata, &written);
  clock.add(written);
  tx.commit();
  clock.lap("commit");
  report_warnings(r.embedding);
  if (!quiet) {
    std::printf(
        "demo: %lld diffraction patterns %dx%d of %s (%zu atoms) rotated about %s, Poisson noise %g photons/pattern\n",
        static_cast<long long>(d.count), d.size, d.size, mol.id.empty() ? mol.source.c_str() : mol.id.c_str(),
        mol.atoms.size(), sp.axis.c_str(), sp.photons);
    std::printf("k-NN graph: k=%d backend=%s in %.3f s\n", r.graph.k, r.graph.backend.c_str(), r.knn_s);
    print_summary(r.embedding, dp, out);
    print_metadata_summary(r.embedding, metadata);
    std::printf("%s\n", clock.summary().c_str());
  }
  std::printf("circular correlation of atan2(psi2, psi1) with the rotation angle: %.4f (with twice the angle: %.4f)\n",
              once, twice);
  return 0;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  auto specs = knn_option_specs();
  for (OptionSpec& s : specs)
    if (s.name == "-k") s.help = "the graph's neighbours per point (required; the demo: 20)";
  for (auto& s : diffusion_option_specs("--embed-k")) specs.push_back(s);
  specs.insert(specs.end(),
               {value("--transform", "none|anscombe|binB[+anscombe]", "applied to the frames before the graph", "none"),
                value("--mask", "FILE|none", "the detector mask (default: the one found with DATA)"),
                flag("--demo", "the built-in demo: simulated diffraction of a molecule rotated about one axis"),
                value("--session", "FILE", "reproduce a saved session (GUI or CLI)"),
                value("--pdb", "FILE|ID", "--demo: the molecule, a PDB file or id", "1ubq"),
                value("--count", "N", "--demo: patterns", "2000"), value("--size", "S", "--demo: S x S pixels", "32"),
                value("--axis", "x|y|z", "--demo: the rotation axis (z: the beam)", "x"),
                value("--photons", "P", "--demo: mean photons per pattern", "1e5"),
                value("--seed", "S", "--demo: random seed", "1"),
                value("--q-max", "Q", "--demo: 1/Angstrom at the middle of the detector's edge", "0.6")});
  Args a("run", "The k-NN graph, then its diffusion map: from DATA, the demo (--demo) or a session (--session).", specs,
         argc, argv, 2, {{"DATA", "the dataset (not with --demo or --session)"}});
  const std::vector<std::string> metadata_specs = a.values("--metadata");
  const bool demo = a.has("--demo"), session = a.has("--session");
  if (demo && session) throw UsageError("run: --demo and --session exclude each other");
  if (a.has("--mask") && (demo || session))
    throw UsageError(std::string("run: --mask applies to DATA; ") +
                     (demo ? "the demo's detector has no mask" : "a session names its own (\"mask\")"));
  if (!demo)
    for (auto o : {"--pdb", "--count", "--size", "--axis", "--photons", "--seed", "--q-max"})
      if (a.has(o)) throw UsageError(std::string("run: ") + o + " belongs to --demo");
  if (demo) {
    if (!a.positionals().empty()) throw UsageError("run --demo: unexpected argument '" + a.positionals()[0] + "'");
    if (!a.has("-o")) throw UsageError("run --demo: missing -o OUTDIR");
    return run_demo(a, metadata_specs);
  }
  if (session) {
    if (!a.positionals().empty()) throw UsageError("run --session: unexpected argument '" + a.positionals()[0] + "'");
    const std::string path = a.str("--session");
    Session s = read_session(path);
    std::string out = a.str("-o", s.output);
    if (out.empty()) throw UsageError("run --session: the session names no output folder; give -o OUTDIR");
    return run_session(s, out, {.overwrite = a.has("--overwrite")}, a.has("--quiet"),
                       fs::absolute(path).lexically_normal().string(), metadata_specs);
  }
  Session s;
  s.data = a.one_positional("DATA");
  if (!a.has("-k")) throw UsageError("run: missing -k K");
  if (!a.has("-o")) throw UsageError("run: missing -o OUTDIR");
  s.dataset = a.str("--dataset");
  s.transform = a.str("--transform", "none");
  validate_transform(s.transform);
  s.mask = a.str("--mask");
  s.backend = a.str("--backend", "auto");
  s.knn = knn_params_from(a);
  s.diffusion = diffusion_params_from(a, "--embed-k");
  return run_session(s, a.str("-o"), {.overwrite = a.has("--overwrite")}, a.has("--quiet"), "", metadata_specs);
}

}  // namespace manifold::cli
