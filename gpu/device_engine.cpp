#include "device_engine.h"

#include <algorithm>
#include <cstring>

#include "manifold/error.h"
#include "manifold/parallel.h"

namespace manifold::gpu {

DeviceEngine::DeviceEngine(int device, const float* host_rows, const TilePlan& plan, bool keep_self, bool force_block)
    : device_(device),
      host_rows_(host_rows),
      plan_(plan),
      keep_self_(keep_self),
      force_block_(force_block),
      gemm_((cuda_check(cudaSetDevice(device), "selecting the device"), Stream())),
      ring_(kRing) {
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, device), "reading the device properties");
  name_ = prop.name;

  const int64_t n = plan.n, d = plan.d;
  const size_t nk = static_cast<size_t>(n) * plan.k;
  workspace_.reset(plan.workspace, "allocating the cuBLAS workspace");
  cublas_check(cublasSetWorkspace(cublas_, workspace_.data(), workspace_.bytes()), "setting the cuBLAS workspace");
  cublas_check(cublasSetStream(cublas_, gemm_), "binding cuBLAS to its stream");

  list_dist_.reset(nk, "allocating the neighbour lists");
  list_index_.reset(nk, "allocating the neighbour lists");
  fill_.reset(static_cast<size_t>(n), "allocating the neighbour lists");
  thr_.reset(static_cast<size_t>(n), "allocating the neighbour lists");

  const int64_t nb = plan.blocks();
  const int64_t slots = plan.resident ? nb : plan.slots;
  const size_t slot_rows = plan.resident ? static_cast<size_t>(n) : static_cast<size_t>(slots) * plan.T;
  rows_.reset(slot_rows * d, "allocating device memory for the rows");
  norms_.reset(slot_rows, "allocating device memory for the row norms");
  for (auto& t : tiles_) t.reset(static_cast<size_t>(plan.T) * plan.W, "allocating a distance tile");
  const size_t cand = 2 * static_cast<size_t>(plan.T) * plan.W;
  cand_dist_.reset(cand, "allocating the candidate buffers");
  cand_index_.reset(cand, "allocating the candidate buffers");
  cand_count_.reset(static_cast<size_t>(plan.T) + plan.W, "allocating the candidate buffers");
  dirty_.reset(static_cast<size_t>(plan.T) + plan.W, "allocating the candidate buffers");
  n_dirty_.reset(2, "allocating the candidate buffers");
  cand_total_.reset(1, "allocating the candidate buffers");

  staging_bytes_ = std::min<size_t>(size_t{32} << 20, static_cast<size_t>(n) * d * sizeof(float));
  staging_bytes_ = std::max<size_t>(staging_bytes_, 4096);
  for (auto& s : staging_) s = PinnedBuffer<unsigned char>(staging_bytes_);

  block_slot_.assign(static_cast<size_t>(nb), -1);
  slot_block_.assign(static_cast<size_t>(slots), -1);
  slot_ready_ = std::vector<Event>(static_cast<size_t>(slots));
  slot_free_ = std::vector<Event>(static_cast<size_t>(slots));
  slot_waited_.assign(static_cast<size_t>(slots), 0);
  slot_free_recorded_.assign(static_cast<size_t>(slots), 0);
  slot_last_use_.assign(static_cast<size_t>(slots), 0);

  cuda_check(cudaMemsetAsync(cand_count_.data(), 0, cand_count_.bytes(), select_), "clearing the candidate counters");
  cuda_check(cudaMemsetAsync(n_dirty_.data(), 0, n_dirty_.bytes(), select_), "clearing the candidate counters");
  cuda_check(cudaMemsetAsync(cand_total_.data(), 0, cand_total_.bytes(), select_), "clearing the candidate counters");
  launch_init_lists(lists(), select_);
}

DeviceEngine::~DeviceEngine() {
  // Work may still be queued when an error or a cancellation unwinds: let it
  // finish before the buffers it uses are freed.
  cudaSetDevice(device_);
  cudaDeviceSynchronize();
}

ListsView DeviceEngine::lists() const {
  ListsView l;
  l.dist = list_dist_.data();
  l.index = list_index_.data();
  l.fill = fill_.data();
  l.thr = thr_.data();
  l.n = plan_.n;
  l.k = plan_.k;
  return l;
}

void DeviceEngine::host_copy(void* dst, const void* src, size_t bytes) {
  // Staging is the one host-side copy of the pipeline; spread it over a few
  // cores so it keeps up with the DMA.
  constexpr size_t kPiece = size_t{2} << 20;
  const int64_t pieces = static_cast<int64_t>((bytes + kPiece - 1) / kPiece);
  parallel_for(0, pieces, std::min(8, hardware_threads(0)), [&](int64_t p) {
    const size_t off = static_cast<size_t>(p) * kPiece;
    std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, std::min(kPiece, bytes - off));
  }, 1);
}

void DeviceEngine::upload_block(int64_t b, float* rows, float* norms) {
  const int64_t d = plan_.d;
  const int64_t r0 = b * plan_.T;
  const int64_t count = std::min<int64_t>(plan_.T, plan_.n - r0);
  const char* src = reinterpret_cast<const char*>(host_rows_ + r0 * d);
  const size_t bytes = static_cast<size_t>(count) * d * sizeof(float);
  for (size_t off = 0; off < bytes;) {
    const size_t len = std::min(staging_bytes_, bytes - off);
    const int s = staging_next_;
    staging_next_ = (s + 1) % kStaging;
    if (staging_used_[s]) staging_free_[s].synchronize("copying rows to the GPU");
    host_copy(staging_[s].data(), src + off, len);
    cuda_check(cudaMemcpyAsync(reinterpret_cast<char*>(rows) + off, staging_[s].data(), len, cudaMemcpyHostToDevice,
                               copy_),
               "copying rows to the GPU");
    staging_free_[s].record(copy_);
    staging_used_[s] = true;
    off += len;
  }
  launch_row_norms(rows, count, d, norms, copy_);
  stats_.h2d_bytes += bytes;
}

int DeviceEngine::ensure_block(int64_t b, int64_t keep_a, int64_t keep_b) {
  const size_t T = static_cast<size_t>(plan_.T), d = static_cast<size_t>(plan_.d);
  int64_t s = block_slot_[static_cast<size_t>(b)];
  if (s < 0) {
    if (plan_.resident) {
      s = b;
    } else {
      // Least recently used slot not needed by the current tile.
      int64_t best = -1;
      for (int64_t c = 0; c < static_cast<int64_t>(slot_block_.size()); ++c) {
        const int64_t held = slot_block_[static_cast<size_t>(c)];
        if (held == keep_a || held == keep_b) continue;
        if (held < 0) {
          best = c;
          break;
        }
        if (best < 0 || slot_last_use_[static_cast<size_t>(c)] < slot_last_use_[static_cast<size_t>(best)]) best = c;
      }
      s = best;
      const int64_t old = slot_block_[static_cast<size_t>(s)];
      if (old >= 0) block_slot_[static_cast<size_t>(old)] = -1;
      // The slot's last reader (a filter on the selection stream) must be done.
      if (slot_free_recorded_[static_cast<size_t>(s)]) copy_.wait(slot_free_[static_cast<size_t>(s)]);
    }
    upload_block(b, rows_.data() + static_cast<size_t>(s) * T * d, norms_.data() + static_cast<size_t>(s) * T);
    slot_ready_[static_cast<size_t>(s)].record(copy_);
    slot_waited_[static_cast<size_t>(s)] = 0;
    block_slot_[static_cast<size_t>(b)] = s;
    slot_block_[static_cast<size_t>(s)] = b;
  }
  slot_last_use_[static_cast<size_t>(s)] = ++use_clock_;
  if (!slot_waited_[static_cast<size_t>(s)]) {
    gemm_.wait(slot_ready_[static_cast<size_t>(s)]);
    slot_waited_[static_cast<size_t>(s)] = 1;
  }
  return static_cast<int>(s);
}

void DeviceEngine::tile(uint64_t t, int64_t I, int64_t c0, int64_t cols, int64_t J) {
  const int64_t T = plan_.T, d = plan_.d;
  const int64_t r0 = I * T;
  const int64_t rows = std::min<int64_t>(T, plan_.n - r0);
  TileEvents& ev = ring_[t % kRing];

  const float* a_rows;
  const float* a_norms;
  const float* b_rows;
  const float* b_norms;
  int slot_a = -1, slot_b = -1;
  if (plan_.resident) {
    ensure_block(I, -1, -1);
    for (int64_t b = c0 / T; b <= (c0 + cols - 1) / T; ++b) ensure_block(b, -1, -1);
    a_rows = rows_.data() + r0 * d;
    a_norms = norms_.data() + r0;
    b_rows = rows_.data() + c0 * d;
    b_norms = norms_.data() + c0;
  } else {
    slot_a = ensure_block(I, I, J);
    slot_b = ensure_block(J, I, J);
    a_rows = rows_.data() + static_cast<size_t>(slot_a) * T * d;
    a_norms = norms_.data() + static_cast<size_t>(slot_a) * T;
    b_rows = rows_.data() + static_cast<size_t>(slot_b) * T * d;
    b_norms = norms_.data() + static_cast<size_t>(slot_b) * T;
  }

  float* dots = tiles_[t % 2].data();
  if (t >= 2) gemm_.wait(ring_[(t - 2) % kRing].filter_end);  // its tile buffer is free again
  ev.gemm_start.record(gemm_);
  const float one = 1.f, zero = 0.f;
  cublas_check(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(cols),
                           static_cast<int>(d), &one, a_rows, static_cast<int>(d), b_rows, static_cast<int>(d), &zero,
                           dots, static_cast<int>(T)),
               "cublasSgemm on a distance tile");
  ev.gemm_end.record(gemm_);

  select_.wait(ev.gemm_end);
  ev.sel_start.record(select_);
  TileView view;
  view.dots = dots;
  view.ld = static_cast<int>(T);
  view.rows = static_cast<int>(rows);
  view.cols = static_cast<int>(cols);
  view.r0 = static_cast<int>(r0);
  view.c0 = static_cast<int>(c0);
  view.col_role_from = c0 == r0 ? static_cast<int>(rows) : 0;
  view.row_norms = a_norms;
  view.col_norms = b_norms;
  view.keep_self = keep_self_;
  CandidatesView cv;
  cv.dist = cand_dist_.data();
  cv.index = cand_index_.data();
  cv.count = cand_count_.data();
  cv.dirty = dirty_.data();
  cv.n_dirty = n_dirty_.data();
  cv.total = cand_total_.data();
  cv.T = plan_.T;
  cv.W = plan_.W;
  const int parity = static_cast<int>(t % 2);
  launch_filter_tile(view, thr_.data(), cv, parity, select_);
  ev.filter_end.record(select_);
  if (!plan_.resident) {
    slot_free_[static_cast<size_t>(slot_a)].record(select_);
    slot_free_recorded_[static_cast<size_t>(slot_a)] = 1;
    slot_free_[static_cast<size_t>(slot_b)].record(select_);
    slot_free_recorded_[static_cast<size_t>(slot_b)] = 1;
  }
  launch_merge_tile(lists(), cv, parity, static_cast<int>(r0), static_cast<int>(c0), force_block_,
                    std::max(plan_.T, plan_.W), select_);
  ev.sel_end.record(select_);
  stats_.gemm_flop += 2.0 * static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(d);
}

void DeviceEngine::complete(uint64_t t, Progress& progress, const std::atomic<bool>& stop) {
  TileEvents& ev = ring_[t % kRing];
  ev.sel_end.synchronize("computing a distance tile");
  stats_.gemm_ms += ev.gemm_end.since(ev.gemm_start);
  stats_.select_ms += ev.sel_end.since(ev.sel_start);
  ++stats_.tiles;
  progress.advance(1);
  if (stop.load(std::memory_order_relaxed)) throw Cancelled();
}

void DeviceEngine::run(const std::vector<int64_t>& strips, Progress& progress, const std::atomic<bool>& stop) {
  cuda_check(cudaSetDevice(device_), "selecting the device");
  const int64_t T = plan_.T, n = plan_.n, nb = plan_.blocks();
  loop_start_.record(copy_);
  uint64_t t = 0;
  bool reverse = false;
  for (int64_t I : strips) {
    const int64_t r0 = I * T;
    if (plan_.resident) {
      for (int64_t c0 = r0; c0 < n; c0 += plan_.W) {
        if (t >= kRing) complete(t - kRing, progress, stop);
        tile(t++, I, c0, std::min<int64_t>(plan_.W, n - c0), -1);
      }
    } else {
      // Serpentine order: the blocks a strip ends with are the ones the next
      // strip starts with, still in their slots.
      for (int64_t s = 0; s < nb - I; ++s) {
        const int64_t J = reverse ? nb - 1 - s : I + s;
        if (t >= kRing) complete(t - kRing, progress, stop);
        tile(t++, I, J * T, std::min<int64_t>(T, n - J * T), J);
      }
      reverse = !reverse;
    }
  }
  for (uint64_t u = t >= kRing ? t - kRing : 0; u < t; ++u) complete(u, progress, stop);
  loop_end_.record(select_);
  loop_end_.synchronize("finishing the tiles");
  stats_.loop_ms = loop_end_.since(loop_start_);
  unsigned long long total = 0;
  cuda_check(cudaMemcpy(&total, cand_total_.data(), sizeof total, cudaMemcpyDeviceToHost), "reading statistics");
  stats_.candidates = total;
}

void DeviceEngine::release_loop_buffers() {
  cudaSetDevice(device_);
  cuda_check(cudaDeviceSynchronize(), "finishing the tiles");
  for (auto& t : tiles_) t.release();
  cand_dist_.release();
  cand_index_.release();
  if (!plan_.resident) {
    rows_.release();
    norms_.release();
  }
}

const float* DeviceEngine::all_rows() {
  if (!plan_.resident) return nullptr;
  cuda_check(cudaSetDevice(device_), "selecting the device");
  for (int64_t b = 0; b < plan_.blocks(); ++b) ensure_block(b, -1, -1);
  Event ready(false);
  ready.record(copy_);
  select_.wait(ready);
  return rows_.data();
}

}  // namespace manifold::gpu
