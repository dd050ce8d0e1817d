// Placeholder until the diffraction simulator lands (issue 4).
#include "cli/commands.h"
#include "manifold/error.h"

namespace manifold::cli {
int cmd_simulate(int, char**) { throw Error("simulate: not built yet"); }
}  // namespace manifold::cli
