#pragma once
// The ranks of one job and the few ways they talk besides the bulk exchange:
// lazy MPI start-up, agreement on failures after each phase (so a failing
// rank never leaves the others waiting in a collective), and small control
// messages (progress, stop, end of phase).
#include <mpi.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace manifold::mpi {

/// How a rank failed.
enum class FailureKind : int { Error = 0, Usage = 1, Cancelled = 2 };

struct LocalFailure {
  FailureKind kind = FailureKind::Error;
  std::string message;
};

/// Thrown on every rank once the ranks agreed that `rank` failed.
struct RankFailure : std::runtime_error {
  RankFailure(int rank, FailureKind kind, std::string message, std::string host, bool everywhere)
      : std::runtime_error(message),
        rank(rank),
        kind(kind),
        message(std::move(message)),
        host(std::move(host)),
        everywhere(everywhere) {}
  int rank;
  FailureKind kind;
  std::string message;
  std::string host;
  bool everywhere;  ///< every rank failed the same way (e.g. a bad argument)
};

/// Runs `f`, turning what it throws into a LocalFailure.
template <class F>
std::optional<LocalFailure> capture(F&& f);

class RankGroup {
 public:
  /// The job's ranks; initialises MPI (FUNNELED) on first use and registers
  /// MPI_Finalize at exit. Throws Error when MPI cannot start.
  static RankGroup& world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Rank and count among the ranks on this host.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  const std::string& host() const { return host_; }
  MPI_Comm comm() const { return comm_; }

  /// Collective: after a local phase every rank calls this with its outcome.
  /// When any rank failed, all ranks throw the same RankFailure (the lowest
  /// failed rank, an error preferred over a cancellation).
  void agree(const std::optional<LocalFailure>& local);

  /// Bytes this rank sent in control messages and agreements.
  uint64_t control_bytes() const { return control_bytes_; }
  void add_control_bytes(uint64_t n) { control_bytes_ += n; }

  /// Ends the whole job at once (for failures outside any agreed phase).
  [[noreturn]] void abort_job(const std::string& message);

 private:
  RankGroup();
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  uint64_t control_bytes_ = 0;
};

// ---- control messages -----------------------------------------------------

enum class ControlType : int32_t { Progress = 1, Stop = 2, End = 3 };
/// The state a rank reports with its progress.
enum class RankState : int32_t { Running = 0, Finished = 1, Failed = 2, Stopped = 3 };

struct ControlMessage {
  ControlType type = ControlType::Progress;
  RankState state = RankState::Running;
  int32_t failed_rank = -1;  ///< End: the failure the ranks agree on
  FailureKind kind = FailureKind::Error;
  int32_t everywhere = 0;
  uint64_t done = 0;
  std::string text;  ///< failure message (and host, for End)
};

constexpr int kControlTag = 7101;

void send_control(RankGroup& g, int dest, const ControlMessage& m);
/// Receives one control message from `source` (MPI_ANY_SOURCE allowed) if
/// one is waiting; `from` gets the sender.
std::optional<ControlMessage> poll_control(RankGroup& g, int source, int* from = nullptr);

// ---- implementation of capture ---------------------------------------------
}  // namespace manifold::mpi

#include "manifold/error.h"

namespace manifold::mpi {
template <class F>
std::optional<LocalFailure> capture(F&& f) {
  try {
    f();
    return std::nullopt;
  } catch (const RankFailure&) {
    throw;
  } catch (const Cancelled&) {
    return LocalFailure{FailureKind::Cancelled, "cancelled"};
  } catch (const UsageError& e) {
    return LocalFailure{FailureKind::Usage, e.what()};
  } catch (const std::bad_alloc&) {
    return LocalFailure{FailureKind::Error, "out of memory"};
  } catch (const std::exception& e) {
    return LocalFailure{FailureKind::Error, e.what()};
  }
}
}  // namespace manifold::mpi
