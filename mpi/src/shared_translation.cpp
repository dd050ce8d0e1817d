#include "shared_translation.h"

namespace manifold::mpi {

void broadcast_translation(exact::Translation& t, int64_t d, int root, MPI_Comm comm) {
  // {any, exact, columns, norm_ratio}: columns <= d, exact in a double.
  double head[4] = {t.any() ? 1.0 : 0.0, t.exact ? 1.0 : 0.0, static_cast<double>(t.columns), t.norm_ratio};
  MPI_Bcast(head, 4, MPI_DOUBLE, root, comm);
  t.exact = head[1] != 0, t.columns = static_cast<int64_t>(head[2]), t.norm_ratio = head[3];
  t.offset.resize(head[0] != 0 ? static_cast<size_t>(d) : 0);
  if (!t.offset.empty()) MPI_Bcast(t.offset.data(), static_cast<int>(d), MPI_FLOAT, root, comm);
}

}  // namespace manifold::mpi
