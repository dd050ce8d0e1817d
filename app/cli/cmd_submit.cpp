// Placeholder until the cluster backend lands (issue 6).
#include "cli/commands.h"
#include "manifold/error.h"

namespace manifold::cli {
int cmd_submit(int, char**) { throw Error("submit: not built yet"); }
}  // namespace manifold::cli
