// manifold embed / run / bench embed: diffusion maps from a graph directory,
// the whole pipeline from a dataset (or the built-in demo, or a session
// file), and the eigensolver benchmark.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <random>
#include <unistd.h>

#include "cli/commands.h"
#include "manifold/dataset.h"
#include "manifold/diffusion_map.h"
#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/mask.h"
#include "manifold/metadata.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/parallel.h"
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

/// Diffusion options shared by embed and run; `k_option` is --k in embed and
/// --embed-k in run (where -k/--k is the graph's k).
std::vector<OptionSpec> diffusion_option_specs(const std::string& k_option) {
  return {{k_option},       {"--epsilon"},   {"--alpha"}, {"--components"}, {"--t"},
          {"--symmetrize"}, {"--local-scaling"}, {"--tolerance"}, {"--ncv"}, {"--no-lock-check", false},
          {"--eigensolver"}, {"--max-matvecs"}, {"--time-limit"}};
}

DiffusionParams diffusion_params_from(const Args& a, const std::string& k_option, DiffusionParams p = {}) {
  p.k = static_cast<int>(a.integer(k_option, p.k, 0, 1 << 20));
  p.epsilon = a.str("--epsilon", p.epsilon);
  p.alpha = a.real("--alpha", p.alpha);
  p.components = static_cast<int>(a.integer("--components", p.components, 1, 1 << 20));
  p.t = a.real("--t", p.t);
  p.symmetrize = a.str("--symmetrize", p.symmetrize);
  if (a.has("--local-scaling")) p.local_scaling = parse_local_scaling(a.str("--local-scaling"));
  p.tolerance = a.real("--tolerance", p.tolerance);
  p.ncv = static_cast<int>(a.integer("--ncv", p.ncv, 0, 1 << 20));
  if (a.has("--no-lock-check")) p.lock_check = false;
  p.max_matvecs = a.integer("--max-matvecs", p.max_matvecs, 0, INT64_MAX);
  p.time_limit_s = a.real("--time-limit", p.time_limit_s);
  p.eigensolver = a.str("--eigensolver", p.eigensolver);
  p.threads = static_cast<int>(a.integer("--threads", p.threads, 0, 4096));
  return p;
}

double total_of(const Timings& t) {
  for (auto& [s, v] : t)
    if (s == "total") return v;
  return 0;
}

/// One line per finding of the diagnostics (points left out, localised
/// coordinates, eigenvalues at 1): never a silent partial or degenerate
/// embedding. embedding.json records the same.
void report_warnings(const DiffusionResult& r) {
  for (const std::string& w : r.diagnostics.warnings) std::fprintf(stderr, "manifold: warning: %s\n", w.c_str());
}

void print_summary(const DiffusionResult& r, const DiffusionParams& p, const std::string& out) {
  std::printf("diffusion map: N=%lld k=%d epsilon=%.6g (%s) alpha=%g t=%g, %d coordinates in %.3f s -> %s\n",
              static_cast<long long>(r.n), r.k, r.epsilon, epsilon_rule(p).c_str(), p.alpha, p.t, r.m,
              total_of(r.timings), out.c_str());
  std::printf("eigenvalues:");
  for (size_t i = 0; i < r.eigenvalues.size() && i < 11; ++i) std::printf(" %.6f", r.eigenvalues[i]);
  std::printf("%s\n", r.eigenvalues.size() > 11 ? " ..." : "");
  if (!r.bgh.is_null())
    std::printf("epsilon auto (Berry-Giannakis-Harlim): max slope %.3f, intrinsic dimension ~ %.2f\n",
                r.bgh.value("max_slope", 0.0), r.bgh.value("dimension", 0.0));
}

/// Graph files into an open transaction (write_graph commits on its own).
void add_graph_files(OutputTransaction& tx, const KnnGraph& g) {
  npy::write(tx.path("indices.npy"), g.indices.data(), {g.n, g.k});
  npy::write(tx.path("distances.npy"), g.distances.data(), {g.n, g.k});
  write_text_file(tx.path("graph.json"), graph_metadata(g).dump(2) + "\n");
}

/// --metadata FILE[:COLUMN] may be repeated, which Args (one value per
/// option) does not do: its occurrences are taken out of argv[first..) first.
std::vector<std::string> take_metadata_options(const std::string& command, int& argc, char** argv, int first) {
  std::vector<std::string> specs;
  int out = first;
  for (int i = first; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--metadata")) {
      if (i + 1 >= argc) throw UsageError(command + ": option --metadata needs a value (FILE[:COLUMN])");
      specs.push_back(argv[++i]);
    } else if (!std::strncmp(argv[i], "--metadata=", 11)) {
      specs.push_back(argv[i] + 11);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return specs;
}

/// The --metadata columns, then those found beside `data` (when given); a
/// discovered file that does not fit is a warning, an explicit one an error.
MetadataTable load_metadata_for(const std::vector<std::string>& specs, int64_t rows, const std::string& data) {
  std::vector<std::string> warnings;
  MetadataTable t = load_metadata(specs, rows, data, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "manifold: warning: %s\n", w.c_str());
  return t;
}

/// The dataset a graph folder was built from: the session.json beside it
/// (run writes one), else graph.json's "data" (knn records it); "" when
/// neither says.
std::string data_of_graph_dir(const std::string& graph_dir, const KnnGraph& graph) {
  const fs::path session = fs::path(graph_dir) / "session.json";
  std::error_code ec;
  if (fs::is_regular_file(session, ec)) {
    try {
      return read_session(session.string()).data;
    } catch (const Error&) {
      // A broken session says nothing; graph.json may.
    }
  }
  const auto data = graph.extra.find("data");
  return data != graph.extra.end() && data->is_string() ? data->get<std::string>() : std::string();
}

/// The one-line correlation summary, when there is metadata.
void print_metadata_summary(const DiffusionResult& r, const MetadataTable& metadata) {
  if (metadata.empty()) return;
  std::printf("%s\n", correlation_summary(metadata_correlations(r, metadata)).c_str());
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
  std::vector<std::string> names = {"indices.npy",   "distances.npy", "graph.json",     "eigenvalues.npy",
                                    "embedding.npy", "point_index.npy", "embedding.csv", "embedding.vtp",
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
                        {{"data", "patterns.npy"}, {"transform", "anscombe"}, {"demo", demo},
                         {"command_timings_s", clock.json()}},
                        &metadata, &written);
  clock.add(written);
  tx.commit();
  clock.lap("commit");
  report_warnings(r.embedding);
  if (!quiet) {
    std::printf("demo: %lld diffraction patterns %dx%d of %s (%zu atoms) rotated about %s, Poisson noise %g photons/pattern\n",
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

// ---- bench embed -----------------------------------------------------------

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// Points on a noisy 2-D manifold in 3-D (never degenerate, never all zero).
Dataset manifold_points(const std::string& kind, int64_t n, double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, noise);
  std::vector<float> v(static_cast<size_t>(n * 3));
  for (int64_t i = 0; i < n; ++i) {
    double x, y, z;
    if (kind == "swiss-roll") {
      const double t = 1.5 * M_PI * (1 + 2 * u(rng)), h = 21 * u(rng);
      x = t * std::cos(t), y = h, z = t * std::sin(t);
    } else if (kind == "torus") {
      const double a = 2 * M_PI * u(rng), b = 2 * M_PI * u(rng);
      x = (3 + std::cos(b)) * std::cos(a), y = (3 + std::cos(b)) * std::sin(a), z = std::sin(b);
    } else {
      throw UsageError("--manifold: unknown manifold '" + kind + "' (swiss-roll, torus)");
    }
    v[static_cast<size_t>(i * 3)] = static_cast<float>(x + g(rng));
    v[static_cast<size_t>(i * 3 + 1)] = static_cast<float>(y + g(rng));
    v[static_cast<size_t>(i * 3 + 2)] = static_cast<float>(z + g(rng));
  }
  Dataset ds(n, 3, std::move(v));
  ds.source = kind;
  ds.format = "generated";
  ds.source_dtype = "float32";
  return ds;
}

/// The full symmetric matrix (diagonal merged in) as CSR arrays for SciPy.
void write_matrix(const std::string& dir, const DiffusionMatrix& a) {
  std::vector<int64_t> ptr(static_cast<size_t>(a.n + 1), 0);
  std::vector<int32_t> idx;
  std::vector<double> val;
  idx.reserve(static_cast<size_t>(a.nnz()));
  val.reserve(static_cast<size_t>(a.nnz()));
  for (int64_t i = 0; i < a.n; ++i) {
    bool diag_done = false;
    for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i + 1)]; ++e) {
      if (!diag_done && a.col[static_cast<size_t>(e)] > i) {
        idx.push_back(static_cast<int32_t>(i));
        val.push_back(a.diag[static_cast<size_t>(i)]);
        diag_done = true;
      }
      idx.push_back(a.col[static_cast<size_t>(e)]);
      val.push_back(a.val[static_cast<size_t>(e)]);
    }
    if (!diag_done) {
      idx.push_back(static_cast<int32_t>(i));
      val.push_back(a.diag[static_cast<size_t>(i)]);
    }
    ptr[static_cast<size_t>(i + 1)] = static_cast<int64_t>(idx.size());
  }
  OutputTransaction tx(dir);
  npy::write(tx.path("indptr.npy"), ptr.data(), {a.n + 1});
  npy::write(tx.path("indices.npy"), idx.data(), {static_cast<int64_t>(idx.size())});
  npy::write(tx.path("data.npy"), val.data(), {static_cast<int64_t>(val.size())});
  tx.commit();
}

}  // namespace

int cmd_embed(int argc, char** argv) {
  const std::vector<std::string> metadata_specs = take_metadata_options("embed", argc, argv, 2);
  auto specs = diffusion_option_specs("--k");
  for (OptionSpec s : {OptionSpec{"--threads"}, OptionSpec{"-o", true, "--output"}, OptionSpec{"--quiet", false, "-q"}})
    specs.push_back(s);
  Args a("embed", specs, argc, argv, 2);
  const std::string graph_dir = a.one_positional("GRAPHDIR");
  const std::string out = a.str("-o", graph_dir);
  DiffusionParams p = diffusion_params_from(a, "--k");
  const bool quiet = a.has("--quiet");
  TerminalProgress sink(stderr, quiet);
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  StepClock clock;
  progress.stage("load graph", 1, "files");
  KnnGraph g = read_graph(graph_dir);
  progress.finish();
  clock.lap("load graph");
  const std::string data = data_of_graph_dir(graph_dir, g);
  const MetadataTable metadata = load_metadata_for(metadata_specs, g.n, data);
  clock.lap("metadata");
  DiffusionResult r = diffusion_map(g, p, progress);
  progress.check_cancel();
  clock.lap("embedding");
  nlohmann::json extra = {{"graph_dir", fs::absolute(graph_dir).lexically_normal().string()}};
  if (!data.empty()) extra["data"] = data;  // trajectory reads the images from it
  extra["command_timings_s"] = clock.json();
  Timings written;
  write_embedding(out, r, p, graph_metadata(g), extra, &metadata, &written);
  clock.add(written);
  report_warnings(r);
  if (!quiet) {
    print_summary(r, p, out);
    print_metadata_summary(r, metadata);
    std::printf("%s\n", clock.summary().c_str());
  }
  return 0;
}

int cmd_run(int argc, char** argv) {
  const std::vector<std::string> metadata_specs = take_metadata_options("run", argc, argv, 2);
  auto specs = knn_option_specs();
  for (auto& s : diffusion_option_specs("--embed-k")) specs.push_back(s);
  for (OptionSpec s : {OptionSpec{"--demo", false}, OptionSpec{"--session"}, OptionSpec{"--transform"}, OptionSpec{"--mask"},
                       OptionSpec{"--pdb"}, OptionSpec{"--count"}, OptionSpec{"--size"}, OptionSpec{"--axis"},
                       OptionSpec{"--photons"}, OptionSpec{"--seed"}, OptionSpec{"--q-max"}})
    specs.push_back(s);
  Args a("run", specs, argc, argv, 2);
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

int cmd_bench_embed(int argc, char** argv) {
  Args a("bench embed",
         {{"-n"}, {"-k", true, "--k"}, {"--manifold"}, {"--noise"}, {"--seed"}, {"--components"}, {"--eigenpairs"},
          {"--repeats"}, {"--tolerance"}, {"--ncv"}, {"--threads"}, {"--graph"}, {"--matrix"}, {"--json"},
          {"--reembed-k"}, {"--only"}, {"--eigensolver"}},
         argc, argv, 3);
  if (!a.positionals().empty()) throw UsageError("bench embed: unexpected argument '" + a.positionals()[0] + "'");
  const int64_t n = a.integer("-n", 100000, 100, INT64_MAX);
  const int k = static_cast<int>(a.integer("-k", 20, 2, 4096));
  const std::string kind = a.str("--manifold", "swiss-roll");
  const double noise = a.real("--noise", 0.05);
  const uint64_t seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  const int pairs = static_cast<int>(a.integer("--eigenpairs", 10, 2, 1000));
  const int repeats = static_cast<int>(a.integer("--repeats", 5, 1, 1000));
  const int reembed_k = static_cast<int>(a.integer("--reembed-k", std::max(2, k * 3 / 4), 1, k));
  const std::string only = a.str("--only", "all");
  if (only != "all" && only != "eigensolve" && only != "reembed" && only != "device")
    throw UsageError("--only: '" + only + "' is not one of all, eigensolve, reembed, device");
  DiffusionParams p;
  p.components = static_cast<int>(a.integer("--components", pairs - 1, 1, 1000));
  p.tolerance = a.real("--tolerance", 1e-10);
  p.ncv = static_cast<int>(a.integer("--ncv", 0, 0, 100000));
  p.threads = static_cast<int>(a.integer("--threads", 0, 0, 4096));
  p.eigensolver = a.str("--eigensolver", "auto");
  validate(p, n, k);
  // The device eigensolver, timed beside the CPU's when there is one (auto)
  // or asked for (gpu); rediffuse and diffusion_map below follow p.eigensolver.
  const DeviceEigensolver* device =
      p.eigensolver != "cpu" && device_eigensolver() && device_eigensolver()->available() ? device_eigensolver()
                                                                                          : nullptr;

  install_cancel_on_signal();
  TerminalProgress sink(stderr, true);
  Progress progress(&sink, &cancel_flag());
  nlohmann::json out = bench_environment(p.threads);
  out["data"] = {{"manifold", kind}, {"n", n}, {"d", 3}, {"noise", noise}, {"seed", seed}};

  // The graph: cached in --graph DIR when given (the k-NN build is not what is timed here).
  KnnGraph g;
  const std::string graph_dir = a.str("--graph");
  bool have = false;
  if (!graph_dir.empty() && fs::exists(fs::path(graph_dir) / "indices.npy")) {
    g = read_graph(graph_dir);
    have = g.n == n && g.k == k;
  }
  if (!have) {
    Dataset ds = manifold_points(kind, n, noise, seed);
    register_cpu_backend();
    KnnParams kp;
    kp.k = k;
    kp.threads = p.threads;
    const auto t = Clock::now();
    g = make_backend("cpu")->build(ds, kp, progress);
    out["graph_build_s"] = seconds_since(t);
    if (!graph_dir.empty()) write_graph(graph_dir, g);
  }
  out["graph"] = {{"n", g.n}, {"k", g.k}, {"backend", g.backend}, {"cached", have}};
  std::printf("graph: N=%lld k=%d (%s)\n", static_cast<long long>(g.n), g.k, have ? "cached" : "built");

  auto t = Clock::now();
  DiffusionMatrix m = diffusion_matrix(g, p, progress);
  const double matrix_s = seconds_since(t);
  out["matrix"] = {{"n", m.n}, {"nnz", m.nnz()}, {"epsilon", m.epsilon}, {"components", m.graph_components},
                   {"build_s", matrix_s}};
  if (a.has("--matrix")) write_matrix(a.str("--matrix"), m);

  auto time_solve = [&](bool check) {
    EigenOptions o;
    o.tolerance = p.tolerance;
    o.ncv = p.ncv;
    o.threads = p.threads;
    o.lock_check = check;
    std::vector<double> runs;
    Eigenpairs last;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = Clock::now();
      last = top_eigenpairs(m, pairs, o, progress);
      runs.push_back(seconds_since(t0));
    }
    nlohmann::json j = {{"eigenpairs", pairs},
                        {"tolerance", p.tolerance},
                        {"ncv", last.ncv},
                        {"lock_check", check},
                        {"runs_s", runs},
                        {"median_s", median(runs)},
                        {"matvecs", last.matvecs},
                        {"lock_check_matvecs", last.check_matvecs},
                        {"lock_check_recovered", last.recovered},
                        {"lock_check_settled", last.check_settled},
                        {"restarts", last.iterations},
                        {"max_residual", last.max_residual},
                        {"eigenvalues", last.values}};
    std::printf("eigensolve (%d pairs, tol %g, ncv %d, %s): median %.4f s over %d runs, %lld mat-vecs, "
                "max residual %.2e\n",
                pairs, p.tolerance, last.ncv, check ? "with lock check" : "Spectra alone", median(runs), repeats,
                static_cast<long long>(last.matvecs), last.max_residual);
    std::fflush(stdout);
    return j;
  };
  // One untimed solve first, so page faults and thread start-up are not measured.
  if (only == "device" && !device) throw UsageError("bench embed --only device: no device eigensolver here");
  const bool cpu_solves = only == "all" || only == "eigensolve";
  if (cpu_solves) {
    EigenOptions o;
    o.tolerance = p.tolerance;
    top_eigenpairs(m, pairs, o, progress);
  }
  // The default (what embed runs), then the variants, for the record.
  if (cpu_solves) {
    out["eigensolve"] = time_solve(true);
    out["eigensolve_without_lock_check"] = time_solve(false);
  }
  if (only != "reembed" && device) {
    EigenOptions o;
    o.tolerance = p.tolerance;
    o.ncv = p.ncv;
    o.threads = p.threads;
    device->solve(m, pairs, o, progress);  // untimed: context, handles, first-touch
    std::vector<double> runs;
    Eigenpairs last;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = Clock::now();
      last = device->solve(m, pairs, o, progress);
      runs.push_back(seconds_since(t0));
    }
    // Agreement with the CPU solve of the same matrix.
    double max_diff = 0;
    if (out.contains("eigensolve"))
      for (int c = 0; c < pairs; ++c)
        max_diff = std::max(max_diff, std::abs(last.values[static_cast<size_t>(c)] -
                                               out["eigensolve"]["eigenvalues"][c].get<double>()));
    out["eigensolve_device"] = {{"method", device->method},
                                {"eigenpairs", pairs},
                                {"tolerance", p.tolerance},
                                {"block", last.ncv},
                                {"runs_s", runs},
                                {"median_s", median(runs)},
                                {"matvecs", last.matvecs},
                                {"max_residual", last.max_residual},
                                {"max_eigenvalue_difference_to_cpu", max_diff},
                                {"details", last.details},
                                {"eigenvalues", last.values}};
    std::printf("eigensolve on the device (%d pairs, tol %g, block %d): median %.4f s over %d runs, %lld mat-vecs "
                "in blocks, max residual %.2e, eigenvalues to %.1e of the CPU's\n",
                pairs, p.tolerance, last.ncv, median(runs), repeats, static_cast<long long>(last.matvecs),
                last.max_residual, max_diff);
    std::fflush(stdout);
  }
  if (only == "eigensolve" || only == "device") {
    if (a.has("--json")) write_text_file(a.str("--json"), out.dump(2) + "\n");
    return 0;
  }

  // Re-embedding after a new k' or epsilon on the same graph: the full
  // solve from scratch (diffusion_map), and the warm LOBPCG from the
  // previous embedding (rediffuse) to the same tolerance and to a preview
  // tolerance of 1e-6, with their agreement with the full solve
  // (compare_embeddings: eigenvectors cluster by cluster).
  const DiffusionResult base = diffusion_map(g, p, progress);
  auto time_embed = [&](const DiffusionParams& q, const std::string& what) {
    DiffusionParams q6 = q;
    q6.tolerance = std::max(1e-6, q.tolerance);
    std::vector<double> full_runs, warm_runs, preview_runs, shown_runs;
    DiffusionResult full, warm, preview;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = Clock::now();
      full = diffusion_map(g, q, progress);
      full_runs.push_back(seconds_since(t0));
      t0 = Clock::now();
      // The same solve with RediffusePreview as the GUI runs it (after_s 0
      // here): when its 1e-6 iterate would be drawn.
      RediffusePreview on_the_way;
      on_the_way.after_s = 0;
      double shown_at = -1;
      on_the_way.show = [&](DiffusionResult&&) { shown_at = seconds_since(t0); };
      warm = rediffuse(g, q, base, progress, 0, &on_the_way);
      warm_runs.push_back(seconds_since(t0));
      if (shown_at >= 0) shown_runs.push_back(shown_at);
      t0 = Clock::now();
      preview = rediffuse(g, q6, base, progress);
      preview_runs.push_back(seconds_since(t0));
    }
    // Agreement with the full solve, on the orthonormal eigenvectors
    // v = sqrt(d) psi of A: eigenvalues whose 1 - lambda differ by less than
    // 1e-3 relative form a cluster, compared as a subspace (cosine of the
    // largest principal angle = smallest singular value of V_full^T V_warm;
    // |cos| for a single vector); also the largest eigenvalue difference and
    // relative error of 1 - lambda (what sets the diffusion distances).
    const DiffusionMatrix mq = diffusion_matrix(g, q, progress);
    auto agreement = [&](const DiffusionResult& r) {
      const EmbeddingAgreement e = compare_embeddings(full, r, mq.degree);
      return nlohmann::json{{"worst_abs_cos_to_full", e.worst_cos},
                            {"clusters", e.clusters},
                            {"largest_cluster", e.largest_cluster},
                            {"max_eigenvalue_difference_to_full", e.max_eigenvalue_difference},
                            {"max_rel_error_1_minus_lambda", e.max_rel_error_1_minus_lambda}};
    };
    auto stages = [](const DiffusionResult& r) {
      nlohmann::json j = nlohmann::json::object();
      for (auto& [s, v] : r.timings) j[s] = v;
      return j;
    };
    const nlohmann::json aw = agreement(warm), ap = agreement(preview);
    auto report = [&](const char* name, const std::vector<double>& runs, const DiffusionResult& r,
                      const nlohmann::json& agree) {
      std::printf("  %s: median %.4f s, %d iterations, %lld mat-vecs, %lld V-cycles, residual %.1e (%s), "
                  "worst cos to the full solve %.10f, eigenvalues to %.1e\n",
                  name, median(runs), r.solver.value("iterations", 0),
                  static_cast<long long>(r.solver.value("matvecs", int64_t{0})),
                  static_cast<long long>(r.solver.value("preconditioner_applies", int64_t{0})),
                  r.solver.value("max_residual", 0.0), r.solver.value("converged", false) ? "converged" : "not converged",
                  agree["worst_abs_cos_to_full"].get<double>(), agree["max_eigenvalue_difference_to_full"].get<double>());
    };
    std::printf("re-embed after %s: full solve median %.4f s (%lld mat-vecs, residual %.1e)\n", what.c_str(),
                median(full_runs), static_cast<long long>(full.solver.value("matvecs", int64_t{0})),
                full.solver.value("max_residual", 0.0));
    report("rediffuse to the tolerance", warm_runs, warm, aw);
    if (!shown_runs.empty())
      std::printf("    of which its 1e-6 iterate shown (RediffusePreview) at median %.4f s\n", median(shown_runs));
    report("rediffuse to 1e-6", preview_runs, preview, ap);
    std::fflush(stdout);
    nlohmann::json jw = {{"runs_s", warm_runs}, {"median_s", median(warm_runs)}, {"stages_s", stages(warm)},
                         {"solver", warm.solver}};
    if (!shown_runs.empty())
      jw["iterate_1e-6_shown"] = {{"runs_s", shown_runs}, {"median_s", median(shown_runs)}};
    jw.update(aw);
    nlohmann::json jp = {{"tolerance", q6.tolerance}, {"runs_s", preview_runs}, {"median_s", median(preview_runs)},
                         {"stages_s", stages(preview)}, {"solver", preview.solver}};
    jp.update(ap);
    return nlohmann::json{{"k", full.k},
                          {"epsilon", full.epsilon},
                          {"components", q.components},
                          {"full", {{"runs_s", full_runs}, {"median_s", median(full_runs)}, {"stages_s", stages(full)},
                                    {"solver", full.solver}}},
                          {"warm", jw},
                          {"warm_1e-6", jp}};
  };
  DiffusionParams qk = p;
  qk.k = reembed_k;
  DiffusionParams qe = p;
  qe.epsilon = std::to_string(2 * m.epsilon);
  out["reembed"] = {{"k_change", time_embed(qk, "k' " + std::to_string(k) + " -> " + std::to_string(reembed_k))},
                    {"epsilon_change", time_embed(qe, "epsilon x 2")}};
  if (a.has("--json")) write_text_file(a.str("--json"), out.dump(2) + "\n");
  return 0;
}

}  // namespace manifold::cli
