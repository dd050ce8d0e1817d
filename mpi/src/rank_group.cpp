#include "rank_group.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace manifold::mpi {

namespace {
void finalize_at_exit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}
}  // namespace

RankGroup& RankGroup::world() {
  static RankGroup group;
  return group;
}

RankGroup::RankGroup() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw Error("--backend mpi: MPI could not start (MPI_Init_thread failed)");
    if (provided < MPI_THREAD_FUNNELED)
      throw Error("--backend mpi: this MPI library gives no thread support (FUNNELED needed)");
    std::atexit(finalize_at_exit);
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  host_ = name;
}

void RankGroup::agree(const std::optional<LocalFailure>& local) {
  // Errors outrank cancellations: a rank that failed is the news, the others
  // were only stopped. Encoded so that MPI_MIN picks it: errors first.
  const int none = 2 * size_;
  int mine = none;
  if (local) mine = (local->kind == FailureKind::Cancelled ? size_ : 0) + rank_;
  int first = none, failed = 0, one = local ? 1 : 0;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm_);
  MPI_Allreduce(&one, &failed, 1, MPI_INT, MPI_SUM, comm_);
  control_bytes_ += 2 * sizeof(int);
  if (first == none) return;
  const int who = first % size_;
  // The failed rank tells everyone what happened and where.
  std::string payload;
  int kind = 0;
  if (rank_ == who) {
    kind = static_cast<int>(local->kind);
    payload = host_ + '\n' + local->message;
  }
  int len = static_cast<int>(payload.size());
  int head[2] = {kind, len};
  MPI_Bcast(head, 2, MPI_INT, who, comm_);
  payload.resize(static_cast<size_t>(head[1]));
  MPI_Bcast(payload.data(), head[1], MPI_CHAR, who, comm_);
  if (rank_ == who) control_bytes_ += sizeof head + payload.size();
  const size_t nl = payload.find('\n');
  throw RankFailure(who, static_cast<FailureKind>(head[0]), payload.substr(nl + 1), payload.substr(0, nl),
                    failed == size_);
}

void RankGroup::abort_job(const std::string& message) {
  std::fprintf(stderr, "manifold: rank %d of %d on %s failed: %s\n", rank_, size_, host_.c_str(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

// Wire format: five int32 (type, state, failed_rank, kind, everywhere), one
// uint64 (done), then the text.
void send_control(RankGroup& g, int dest, const ControlMessage& m) {
  std::string text = m.text.substr(0, 2000);  // stays below any eager limit
  std::vector<char> buf(5 * sizeof(int32_t) + sizeof(uint64_t) + text.size());
  int32_t head[5] = {static_cast<int32_t>(m.type), static_cast<int32_t>(m.state), m.failed_rank,
                     static_cast<int32_t>(m.kind), m.everywhere};
  std::memcpy(buf.data(), head, sizeof head);
  std::memcpy(buf.data() + sizeof head, &m.done, sizeof m.done);
  std::memcpy(buf.data() + sizeof head + sizeof m.done, text.data(), text.size());
  MPI_Send(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, dest, kControlTag, g.comm());
  g.add_control_bytes(buf.size());
}

std::optional<ControlMessage> poll_control(RankGroup& g, int source, int* from) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(source, kControlTag, g.comm(), &flag, &status);
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::vector<char> buf(static_cast<size_t>(count));
  MPI_Recv(buf.data(), count, MPI_BYTE, status.MPI_SOURCE, kControlTag, g.comm(), MPI_STATUS_IGNORE);
  if (from) *from = status.MPI_SOURCE;
  ControlMessage m;
  int32_t head[5];
  const size_t fixed = sizeof head + sizeof m.done;
  if (buf.size() < fixed) throw Error("internal: short control message");
  std::memcpy(head, buf.data(), sizeof head);
  std::memcpy(&m.done, buf.data() + sizeof head, sizeof m.done);
  m.type = static_cast<ControlType>(head[0]);
  m.state = static_cast<RankState>(head[1]);
  m.failed_rank = head[2];
  m.kind = static_cast<FailureKind>(head[3]);
  m.everywhere = head[4];
  m.text.assign(buf.data() + fixed, buf.size() - fixed);
  return m;
}

}  // namespace manifold::mpi
