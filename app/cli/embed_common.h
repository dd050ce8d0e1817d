#pragma once
// What `embed` and `run` share: the diffusion options, the --metadata
// columns and the lines that report an embedding.
#include <string>
#include <vector>

#include "cli/args.h"
#include "manifold/diffusion_map.h"
#include "manifold/metadata.h"

namespace manifold::cli {

/// Diffusion options shared by embed and run, --metadata among them;
/// `k_option` is --k in embed and --embed-k in run (where -k/--k is the graph's k).
std::vector<OptionSpec> diffusion_option_specs(const std::string& k_option);
/// The options' values; in run, an --embed-k above -k is refused here
/// (UsageError naming --embed-k), before the graph is built.
DiffusionParams diffusion_params_from(const Args& a, const std::string& k_option, DiffusionParams p = {});
/// The default number of coordinates (--components not given) for `n`
/// points: at most N - 2, the eigensolver's limit, so a handful of images
/// embeds in fewer coordinates instead of failing on an option nobody set.
int default_components_for(int default_components, int64_t n);

/// The --metadata columns, then those found beside `data` (when given); a
/// discovered file that does not fit is a warning, an explicit one an error.
MetadataTable load_metadata_for(const std::vector<std::string>& specs, int64_t rows, const std::string& data);

/// One line per finding of the diagnostics (points left out, localised
/// coordinates, eigenvalues at 1): never a silent partial or degenerate
/// embedding. embedding.json records the same.
void report_warnings(const DiffusionResult& r);
/// The embedding's summary lines: parameters, eigenvalues, the BGH estimate.
void print_summary(const DiffusionResult& r, const DiffusionParams& p, const std::string& out);
/// The one-line correlation summary, when there is metadata.
void print_metadata_summary(const DiffusionResult& r, const MetadataTable& metadata);

}  // namespace manifold::cli
