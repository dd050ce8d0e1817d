// manifold embed: the diffusion map of a k-NN graph folder, written with
// the metadata columns found beside its data or named by --metadata.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/embed_common.h"
#include "manifold/dataset.h"
#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/output.h"
#include "manifold/printable.h"
#include "manifold/results_folder.h"
#include "manifold/step_clock.h"
#include "manifold/terminal_progress.h"

namespace fs = std::filesystem;

namespace manifold::cli {

namespace {

/// The dataset a graph folder was built from: the session.json beside it
/// (run writes one), else graph.json's "data" (knn records it), found where
/// it was recorded or, moved with the results, by name beside the folder;
/// "" when neither says. A session.json that cannot be read is said, not
/// fatal: the names and metadata are extras.
std::string data_of_graph_dir(const std::string& graph_dir, bool quiet) {
  try {
    const ResultsFolder r = read_results_folder(graph_dir);
    if (!quiet)
      for (const std::string& file : r.moved) note_read_beside(file);
    return r.session.data;
  } catch (const Error& e) {
    std::fprintf(stderr, "manifold: warning: %s; embedding.csv and embedding.vtp get no file names\n", e.what());
    return {};
  }
}

/// The names of the graph's `n` rows: those of the dataset it was built
/// from (item_names_of: an image folder's files, listed, not decoded), or
/// none where the data names no rows or is gone. A folder that cannot be
/// listed, or no longer holds one image per point, gives none with a
/// warning: a name beside the wrong point is worse than no name.
std::vector<std::string> row_names_of(const std::string& data, int64_t n) {
  if (data.empty()) return {};
  const char* without = "; embedding.csv and embedding.vtp get no file names";
  std::vector<std::string> names;
  try {
    names = item_names_of(data);
  } catch (const Error& e) {
    std::fprintf(stderr, "manifold: warning: %s%s\n", e.what(), without);
    return {};
  }
  if (!names.empty() && static_cast<int64_t>(names.size()) != n) {
    std::fprintf(stderr, "manifold: warning: %s holds %zu images now, the graph %lld points%s\n",
                 printable_path(data).c_str(), names.size(), static_cast<long long>(n), without);
    return {};
  }
  return names;
}

/// Every file an embedding folder gets (write_embedding_files): a folder
/// holding anything else, another graph among it, is refused before the
/// eigensolve, unless --overwrite.
const std::vector<std::string> kEmbeddingFiles = {"eigenvalues.npy", "embedding.npy", "point_index.npy",
                                                  "embedding.csv",   "embedding.vtp", "embedding.json"};

/// The embedding's files, in place whole or not at all; `steps` gets
/// write_embedding_files's steps, then "commit".
void write_embedding_folder(const std::string& out, const OutputOptions& output, const std::string& graph_dir,
                            const DiffusionResult& r, const DiffusionParams& p, const KnnGraph& g,
                            const nlohmann::json& extra, const MetadataTable& metadata,
                            const std::vector<std::string>& row_names, StepClock& clock) {
  OutputTransaction tx(out, output, graph_dir);
  Timings written;
  write_embedding_files(tx, r, p, graph_metadata(g), extra, &metadata, &row_names, &written);
  clock.add(written);
  tx.commit();
  clock.lap("commit");
}

}  // namespace

int cmd_embed(int argc, char** argv) {
  auto specs = diffusion_option_specs("--k");
  specs.insert(specs.end(), {value("--threads", "T", "CPU threads (0: every core)", "0"),
                             value("-o,--output", "OUTDIR", "where to write the embedding", "GRAPHDIR"),
                             flag("--overwrite", "replace what the output folder holds (another graph too)"),
                             flag("--quiet,-q", "no progress and no summary")});
  Args a("embed", "The diffusion map of a k-NN graph folder (as knn or run write it).", specs, argc, argv, 2,
         {{"GRAPHDIR", "the k-NN graph folder"}});
  const std::vector<std::string> metadata_specs = a.values("--metadata");
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
  // The folder is checked before the eigensolve (a missing graph is named
  // first); the graph kept beside the embedding must be the one it is
  // computed from.
  const OutputOptions output{.overwrite = a.has("--overwrite")};
  check_output_dir(out, kEmbeddingFiles, output, graph_dir);
  if (!a.has("--components")) p.components = default_components_for(p.components, g.n);
  progress.finish();
  clock.lap("load graph");
  const std::string data = data_of_graph_dir(graph_dir, quiet);
  const MetadataTable metadata = load_metadata_for(metadata_specs, g.n, data);
  const std::vector<std::string> row_names = row_names_of(data, g.n);
  clock.lap("metadata");
  DiffusionResult r = diffusion_map(g, p, progress);
  progress.check_cancel();
  clock.lap("embedding");
  nlohmann::json extra = {{"graph_dir", fs::absolute(graph_dir).lexically_normal().string()}};
  if (!data.empty()) extra["data"] = data;  // trajectory reads the images from it
  extra["command_timings_s"] = clock.json();
  write_embedding_folder(out, output, graph_dir, r, p, g, extra, metadata, row_names, clock);
  report_warnings(r);
  if (!quiet) {
    print_summary(r, p, out);
    print_metadata_summary(r, metadata);
    std::printf("%s\n", clock.summary().c_str());
  }
  return 0;
}

}  // namespace manifold::cli
