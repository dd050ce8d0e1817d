#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "manifold/dataset.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/mask.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/printable.h"
#include "manifold/step_clock.h"
#include "manifold/terminal_progress.h"
#ifdef MANIFOLD_HAVE_MPI
#include "manifold/mpi/mpi_knn_backend.h"
#endif

namespace manifold::cli {

namespace fs = std::filesystem;

int cmd_info(int argc, char** argv) {
  Args a("info", "Dataset facts: N, d, type, value range, the mask knn would apply.",
         {value("--dataset", "PATH", "the dataset inside an HDF5/CXI file, or the array of an .npz")}, argc, argv, 2,
         {{"DATA", "the dataset"}});
  ReadOptions ro;
  ro.hdf5_dataset = a.str("--dataset");
  Dataset ds = load_dataset(a.one_positional("DATA"), ro);
  auto [lo, hi] = ds.value_range();
  std::string shape;
  for (size_t i = 0; i < ds.item_shape.size(); ++i) shape += (i ? "x" : "") + std::to_string(ds.item_shape[i]);
  std::printf("file:    %s\n", ds.source.c_str());
  std::printf("format:  %s\n", ds.format.c_str());
  if (!ds.array.empty()) std::printf("array:   %s\n", ds.array.c_str());
  std::printf("N:       %lld\n", static_cast<long long>(ds.rows()));
  std::printf("d:       %lld (item shape %s)\n", static_cast<long long>(ds.cols()), shape.c_str());
  std::printf("type:    %s%s\n", ds.source_dtype.c_str(), ds.memory_mapped() ? " (memory-mapped)" : "");
  std::printf("range:   [%g, %g]\n", static_cast<double>(lo), static_cast<double>(hi));
  if (!ds.labels.empty()) std::printf("labels:  %zu\n", ds.labels.size());
  if (!ds.item_names.empty())  // a folder: which file is row 0 and which the last, in the order read
    std::printf("rows:    0 = %s ... %lld = %s (file names in natural order)\n", ds.item_names.front().c_str(),
                static_cast<long long>(ds.rows() - 1), ds.item_names.back().c_str());
  // The mask knn and run would find with the data, or why it would be refused.
  try {
    if (const DetectorMask m = mask_for(ds.source, "", ds); !m.empty())
      std::printf("%s\n", mask_summary(m).replace(0, 5, "mask:   ").c_str());
  } catch (const Error& e) {
    std::printf("mask:    %s\n", e.what());
  }
  return 0;
}

namespace {

/// The files of a k-NN graph folder, as read_graph expects them.
const std::vector<std::string> kGraphFiles = {"indices.npy", "distances.npy", "graph.json"};

/// Parameter checks against the data: a message about "the dataset" names the file.
void validate_for(const KnnParams& p, const Dataset& ds, const std::string& input) {
  try {
    validate(p, ds.rows());
  } catch (const UsageError& e) {
    const std::string m = e.what();
    if (m.rfind("dataset ", 0) == 0) throw UsageError(input + m.substr(7));
    throw;
  }
}

void write_graph_folder(const std::string& out, const KnnGraph& g, const OutputOptions& options) {
  OutputTransaction tx(out, options);
  npy::write(tx.path("indices.npy"), g.indices.data(), {g.n, g.k});
  npy::write(tx.path("distances.npy"), g.distances.data(), {g.n, g.k});
  write_text_file(tx.path("graph.json"), graph_metadata(g).dump(2) + "\n");
  tx.commit();
}

}  // namespace

int cmd_knn(int argc, char** argv) {
  std::vector<OptionSpec> specs = knn_option_specs();
  for (OptionSpec& s : specs)
    if (s.name == "-k") s.default_text = "10";
  specs.push_back(value("--mask", "FILE|none", "the detector mask (default: the one found with DATA)"));
  Args a("knn", "The exact k-nearest-neighbour graph of a dataset, written to a folder.", specs, argc, argv, 2,
         {{"DATA", "the dataset"}});
  const std::string input = a.one_positional("DATA");
  if (!a.has("-o")) throw UsageError("knn: missing -o OUTDIR");
  KnnParams p = knn_params_from(a);
  ReadOptions ro;
  ro.hdf5_dataset = a.str("--dataset");
  auto backend = make_backend(a.str("--backend", "auto"));
  // A folder holding anything but an earlier k-NN graph is refused before
  // the long work, unless --overwrite.
  const OutputOptions output{.overwrite = a.has("--overwrite")};
  check_output_dir(a.str("-o"), kGraphFiles, output);

  bool other_rank = false;  // MPI ranks other than 0 stay silent
#ifdef MANIFOLD_HAVE_MPI
  other_rank = a.str("--backend") == "mpi" && mpi::launcher_rank() > 0;
#endif
  TerminalProgress sink(stderr, a.has("--quiet") || other_rank);
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  StepClock clock;
  progress.stage("load", 1, "files");
  Dataset ds = load_dataset(input, ro);
  const DetectorMask mask = mask_for(input, a.str("--mask"), ds);
  progress.finish();
  ds = masked_features(ds, mask);  // the graph sees the valid pixels only; graph.json says which
  validate_for(p, ds, input);
  if (!other_rank) note_ignored_gpu_options(p, backend->name());
  clock.lap("load");
  KnnGraph g = backend->build(ds, p, progress);
  if (!g.output_rank) return 0;
  clock.lap("graph");
  progress.check_cancel();
  // Where the rows came from: embed finds the metadata beside it, trajectory the images.
  g.extra["data"] = fs::absolute(input).lexically_normal().string();
  if (!ro.hdf5_dataset.empty()) g.extra["dataset"] = ro.hdf5_dataset;
  if (!mask.empty()) g.extra["mask"] = mask_json(mask);
  g.extra["command_timings_s"] = clock.json();
  write_graph_folder(a.str("-o"), g, output);
  clock.lap("write graph");
  double total = 0;
  for (auto& [s, t] : g.timings)
    if (s == "total") total = t;
  if (!a.has("--quiet")) {
    const std::string note = certificate_note(g);
    if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
    if (!mask.empty()) std::printf("%s\n", mask_summary(mask).c_str());
    std::printf("k-NN graph: N=%lld d=%lld k=%d metric=%s backend=%s strategy=%s in %.3f s -> %s\n",
                static_cast<long long>(g.n), static_cast<long long>(g.d), g.k, to_string(g.metric).c_str(),
                g.backend.c_str(), g.strategy.c_str(), total, a.str("-o").c_str());
    double mean_first = 0, mean_last = 0;
    for (int64_t i = 0; i < g.n; ++i) {
      mean_first += g.distances[i * g.k];
      mean_last += g.distances[i * g.k + g.k - 1];
    }
    if (g.k == 1) std::printf("mean distance to the neighbour %.6g\n", mean_first / g.n);
    else
      std::printf("mean distance to the 1st neighbour %.6g, to the %s %.6g\n", mean_first / g.n, ordinal(g.k).c_str(),
                  mean_last / g.n);
    std::printf("%s\n", clock.summary().c_str());
  }
  return 0;
}

}  // namespace manifold::cli
