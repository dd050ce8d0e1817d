#pragma once
// Subcommands of the `manifold` CLI. Each returns the exit status; errors are
// thrown (UsageError -> 2, any other Error -> 1) and printed by main().
#include "cli/args.h"
#include "manifold/knn.h"

namespace manifold::cli {

int cmd_info(int argc, char** argv);
int cmd_knn(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_simulate(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_bench_embed(int argc, char** argv);  ///< manifold bench embed ...
int cmd_submit(int argc, char** argv);
int cmd_trajectory(int argc, char** argv);  ///< manifold trajectory EMBEDDINGDIR ... -o MOVIE
int cmd_cluster(int argc, char** argv);     ///< manifold cluster EMBEDDINGDIR ... -o FILE.npy

/// KnnParams from the options of knn_option_specs().
KnnParams knn_params_from(const Args& args);
/// The note for options a backend does not use (--select and fast-exact on
/// the cpu backend: it has one selection and is exact); "" when none.
std::string ignored_gpu_options(const KnnParams& p, const std::string& backend);
/// Prints ignored_gpu_options() to stderr when there is one.
void note_ignored_gpu_options(const KnnParams& p, const std::string& backend);
/// "manifold: note: read FILE beside the results: the recorded path is not
/// there" (core's find_recorded_file found moved data by name).
void note_read_beside(const std::string& file);
/// The same for --select as given: a name, a list or "all" (bench).
void note_ignored_gpu_options(const std::string& select, Precision precision, const std::string& backend);
/// The machine facts every benchmark JSON starts with: host, CPU threads.
nlohmann::json bench_environment(int threads);
/// The median of a benchmark's runs (0 when there are none).
double median(std::vector<double> v);
/// "0,1,3" or "all" -> device list (empty = all).
std::vector<int> parse_devices(const std::string& text);

}  // namespace manifold::cli
