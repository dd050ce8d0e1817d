// Placeholder until the diffusion-map work lands (issue 4).
#include "cli/commands.h"
#include "manifold/error.h"

namespace manifold::cli {
int cmd_embed(int, char**) { throw Error("embed: not built yet"); }
int cmd_run(int, char**) { throw Error("run: not built yet"); }
int cmd_bench_embed(int, char**) { throw Error("bench embed: not built yet"); }
}  // namespace manifold::cli
