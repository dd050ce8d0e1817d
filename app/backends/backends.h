#pragma once
// The backend registration both programs share (manifold and manifold-explorer):
// a library of its own so that the desktop application and its tests link the
// backends without the command-line library.

namespace manifold {

/// Registers every backend built into this program (cpu; gpu, mpi when built).
void register_all_backends();

}  // namespace manifold
