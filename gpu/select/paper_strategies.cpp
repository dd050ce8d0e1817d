// Placeholder until issue 7's strategies land.
#include "select/paper_strategies.h"

#include "manifold/error.h"

namespace manifold::gpu::select {

bool is_paper_strategy(const std::string& name) {
  return name == "quick" || name == "sort" || name == "heap" || name == "bitonic";
}

KnnGraph build_with_paper_strategy(const Dataset&, const KnnParams& params, Progress&) {
  throw UsageError("--select " + params.select + ": not available in the GPU backend yet (it has auto, warp, merge)");
}

}  // namespace manifold::gpu::select
