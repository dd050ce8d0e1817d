// manifold run: the whole pipeline (k-NN graph, then diffusion map) from a
// dataset, from the built-in demo (simulated diffraction), or from a saved
// session.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

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

/// Each file's own write time, for embedding.json's "output_files_s".
nlohmann::json files_json(const Timings& files) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [file, seconds] : files) j[file] = seconds;
  return j;
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

/// The k-NN graph; validates the graph's and the embedding's parameters
/// before the long work. `clock` gets the step "graph"; `seconds` the
/// graph's own time.
KnnGraph build_graph(const Dataset& ds, const KnnParams& kp, const std::string& backend_name, const DiffusionParams& dp,
                     Progress& progress, StepClock& clock, double& seconds) {
  validate(kp, ds.rows());
  // run's K' is --embed-k (a session's diffusion.k): named so here, where the
  // graph's k may be a default (the demo's) or a session's.
  if (dp.k > kp.k)
    throw UsageError("--embed-k " + std::to_string(dp.k) +
                     ": must be between 0 (all of the graph's neighbours) and the graph's k = " + std::to_string(kp.k));
  validate(dp, ds.rows(), kp.k);  // before the long k-NN build, not after it
  auto backend = make_backend(backend_name);
  note_ignored_gpu_options(kp, backend->name());
  const auto t = Clock::now();
  KnnGraph graph = backend->build(ds, kp, progress);
  seconds = seconds_since(t);
  progress.check_cancel();
  clock.lap("graph");
  return graph;
}

/// The diffusion map of the graph; `clock` gets the step "embedding".
DiffusionResult embed(const KnnGraph& graph, const DiffusionParams& dp, Progress& progress, StepClock& clock) {
  DiffusionResult r = diffusion_map(graph, dp, progress);
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

/// The session as run records it: absolute data and mask paths (the mask
/// file used, found or named, so a replay reads the same one), no output.
Session session_record(const Session& s, const DetectorMask& mask) {
  Session record = s;
  record.data = fs::absolute(s.data).lexically_normal().string();
  if (!mask.empty()) record.mask = fs::absolute(mask.file).lexically_normal().string();
  for (std::string& spec : record.metadata) {
    const MetadataSpec m = parse_metadata_spec(spec);
    spec = fs::absolute(m.file).lexically_normal().string() + (m.column.empty() ? "" : ":" + m.column);
  }
  record.output.clear();
  return record;
}

/// `components_given`: false where --components was not given (the
/// default then fits the loaded points: default_components_for).
int run_session(Session s, const std::string& out, const OutputOptions& output, bool quiet,
                const std::string& session_origin, bool components_given) {
  check_output_dir(out, run_files(false), output);
  TerminalProgress sink(stderr, quiet);
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  StepClock clock;
  const GraphInput input = load_with_transform(s, progress, clock);
  clock.lap("transform");
  const Dataset& ds = input.features;
  if (!components_given) s.diffusion.components = default_components_for(s.diffusion.components, ds.rows());
  const MetadataTable metadata = load_metadata_for(s.metadata, ds.rows(), s.data);  // before the long work
  clock.lap("metadata");
  double knn_s = 0;
  KnnGraph graph = build_graph(ds, s.knn, s.backend, s.diffusion, progress, clock, knn_s);
  if (!input.mask.empty()) graph.extra["mask"] = mask_json(input.mask);
  // The graph's files are written while the embedding is computed (by the
  // rank that writes); the writes end before the transaction does.
  std::optional<OutputTransaction> tx;
  ParallelWrites graph_writes;
  if (graph.output_rank) {
    tx.emplace(out, output);
    start_graph_writes(graph_writes, *tx, graph, "write graph");
  }
  const DiffusionResult embedding = embed(graph, s.diffusion, progress, clock);
  if (!graph.output_rank) return 0;
  const ParallelWrites::Seconds graph_written = graph_writes.wait();
  clock.add(graph_written.steps);
  const Session record = session_record(s, input.mask);
  write_text_file(tx->path("session.json"), session_to_json(record).dump(2) + "\n");
  clock.lap("write session");
  nlohmann::json extra = {{"data", record.data}, {"transform", s.transform}, {"knn_s", knn_s}};
  if (!session_origin.empty()) extra["session"] = session_origin;
  extra["command_timings_s"] = clock.json();
  extra["output_files_s"] = files_json(graph_written.files);
  extra["output_files_s"]["session.json"] = clock.steps().back().second;
  Timings written;
  // An image folder's rows keep their file names in the CSV and the VTP.
  write_embedding_files(*tx, embedding, s.diffusion, graph_metadata(graph), extra, &metadata, &ds.item_names, &written);
  clock.add(written);
  tx->commit();
  clock.lap("commit");
  report_warnings(embedding);
  if (!quiet) {
    if (!input.mask.empty()) std::printf("%s\n", mask_summary(input.mask).c_str());
    std::printf("k-NN graph: N=%lld d=%lld k=%d metric=%s backend=%s in %.3f s\n", static_cast<long long>(graph.n),
                static_cast<long long>(graph.d), graph.k, to_string(graph.metric).c_str(), graph.backend.c_str(),
                knn_s);
    print_summary(embedding, s.diffusion, out);
    print_metadata_summary(embedding, metadata);
    std::printf("%s\n", clock.summary().c_str());
  }
  return 0;
}

/// The demo's simulation from its options.
DiffractionParams demo_params(const Args& a) {
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
  return sp;
}

/// The true rotation angle first (as patterns.angles.npy beside the
/// patterns holds it), then the user's columns.
MetadataTable with_angle_column(const MetadataTable& metadata, const DiffractionImages& d) {
  MetadataTable table(d.count);
  MetadataColumn angle;
  angle.name = "angle";
  angle.kind = MetadataKind::Angle;
  angle.source = "patterns.angles.npy";
  angle.values = d.angles;
  table.add(std::move(angle));
  for (const MetadataColumn& c : metadata.columns()) table.add(c);
  return table;
}

/// Starts writing the simulated patterns, their angles and their
/// description into an open transaction, as files of `step`.
void start_pattern_writes(ParallelWrites& writes, OutputTransaction& tx, const DiffractionImages& d,
                          const std::string& step) {
  const std::string patterns = tx.path("patterns.npy"), angles = tx.path("patterns.angles.npy"),
                    json = tx.path("patterns.json");
  writes.start(step, "patterns.npy", [&d, patterns] {
    npy::write(patterns, d.images.data(), {d.count, d.size, d.size});
  });
  writes.start(step, "patterns.angles.npy", [&d, angles] { npy::write(angles, d.angles.data(), {d.count}); });
  writes.start(step, "patterns.json", [&d, json] { write_text_file(json, d.metadata.dump(2) + "\n"); });
}

int run_demo(const Args& a, const std::vector<std::string>& metadata_specs) {
  const bool quiet = a.has("--quiet");
  const std::string out = a.str("-o");
  const OutputOptions output{.overwrite = a.has("--overwrite")};
  check_output_dir(out, run_files(true), output);
  const DiffractionParams sp = demo_params(a);
  KnnParams kp = knn_params_from(a);
  if (!a.has("-k")) kp.k = 20;
  DiffusionParams dp = diffusion_params_from(a, "--embed-k");
  if (!a.has("--components")) dp.components = default_components_for(4, sp.count);
  const std::string backend = a.str("--backend", "auto");
  const std::string pdb = a.has("--pdb") ? a.str("--pdb") : find_packaged_pdb("1ubq");
  Molecule mol = read_pdb(pdb);
  const MetadataTable user_metadata = load_metadata_for(metadata_specs, sp.count, "");

  TerminalProgress sink(stderr, quiet);
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  StepClock clock;
  const DiffractionImages d = simulate_diffraction(mol, sp, progress);
  // Photon counts are variance-stabilised before the graph (see anscombe_transform).
  std::vector<float> v = d.images;
  anscombe_transform(v.data(), static_cast<int64_t>(v.size()));
  Dataset ds(d.count, static_cast<int64_t>(d.size) * d.size, std::move(v));
  ds.source = "patterns.npy";
  ds.item_shape = {d.size, d.size};
  clock.lap("simulate");
  double knn_s = 0;
  const KnnGraph graph = build_graph(ds, kp, backend, dp, progress, clock, knn_s);
  // The patterns' and the graph's files are written while the embedding is computed.
  OutputTransaction tx(out, output);
  ParallelWrites first_writes;
  start_pattern_writes(first_writes, tx, d, "write patterns and graph");
  start_graph_writes(first_writes, tx, graph, "write patterns and graph");
  const DiffusionResult embedding = embed(graph, dp, progress, clock);
  const ParallelWrites::Seconds first_written = first_writes.wait();
  clock.add(first_written.steps);
  auto [once, twice] = angle_recovery(embedding, d.angles);
  const MetadataTable metadata = with_angle_column(user_metadata, d);

  Session s;
  s.data = "patterns.npy";
  s.transform = "anscombe";
  s.backend = backend;
  s.knn = kp;
  s.diffusion = dp;
  write_text_file(tx.path("session.json"), session_to_json(s).dump(2) + "\n");
  clock.lap("write session");
  const nlohmann::json demo = {{"molecule", mol.id.empty() ? mol.source : mol.id},
                               {"patterns", d.count},
                               {"size", d.size},
                               {"axis", sp.axis},
                               {"photons", sp.photons},
                               {"circular_correlation_angle", once},
                               {"circular_correlation_twice_angle", twice},
                               {"simulation", d.metadata}};
  nlohmann::json files = files_json(first_written.files);
  files["session.json"] = clock.steps().back().second;
  Timings written;
  write_embedding_files(tx, embedding, dp, graph_metadata(graph),
                        {{"data", "patterns.npy"},
                         {"transform", "anscombe"},
                         {"demo", demo},
                         {"command_timings_s", clock.json()},
                         {"output_files_s", files}},
                        &metadata, nullptr, &written);
  clock.add(written);
  tx.commit();
  clock.lap("commit");
  report_warnings(embedding);
  if (!quiet) {
    std::printf(
        "demo: %lld diffraction patterns %dx%d of %s (%zu atoms) rotated about %s, Poisson noise %g photons/pattern\n",
        static_cast<long long>(d.count), d.size, d.size, mol.id.empty() ? mol.source.c_str() : mol.id.c_str(),
        mol.atoms.size(), sp.axis.c_str(), sp.photons);
    std::printf("k-NN graph: k=%d backend=%s in %.3f s\n", graph.k, graph.backend.c_str(), knn_s);
    print_summary(embedding, dp, out);
    print_metadata_summary(embedding, metadata);
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
    s.metadata.insert(s.metadata.end(), metadata_specs.begin(), metadata_specs.end());
    return run_session(s, out, {.overwrite = a.has("--overwrite")}, a.has("--quiet"),
                       fs::absolute(path).lexically_normal().string(), true);
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
  s.metadata = metadata_specs;
  return run_session(s, a.str("-o"), {.overwrite = a.has("--overwrite")}, a.has("--quiet"), "", a.has("--components"));
}

}  // namespace manifold::cli
