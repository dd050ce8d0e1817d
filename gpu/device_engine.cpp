#include "device_engine.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "manifold/error.h"
#include "manifold/parallel.h"
#include "settings.h"
#include "utils/host_copy.h"

namespace manifold::gpu {

namespace {
DeviceContext& context_on(int device) {
  DeviceContext& ctx = DeviceContext::get(device);
  cuda_check(cudaSetDevice(device), "selecting the device");
  return ctx;
}

}  // namespace

PriorBoundPlan prior_bound_plan(const TilePlan& plan, size_t shared_optin) {
  const Settings& set = settings();
  PriorBoundPlan pp;
  const int64_t n = plan.n;
  const int cap = plan.k;
  // A list that holds every other point needs no bound.
  if (set.prior_sample == 0 || n < 2 || cap >= n - 1) return pp;
  if (set.prior_sample < 0 && cap <= kWarpMergeMaxK) return pp;
  // Points at or below a row's capacity-th distance, the row included: each
  // sample column is one with probability p.
  const double p = std::min(1.0, static_cast<double>(cap + 1) / static_cast<double>(n));
  // Enough columns that kPriorSampleMean of them are expected below the
  // capacity-th distance (the rank's margin, four standard deviations, is
  // then a smaller part of it), within [kPriorMinSample, kPriorMaxSample];
  // at most a quarter of the rows, what a block's shared memory holds, and
  // what fits a candidate set (the sample's dot products and rows: 2 T W
  // floats).
  const int64_t room = 2 * static_cast<int64_t>(plan.T) * plan.W;
  const int64_t wanted = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(kPriorSampleMean / p)), kPriorMinSample,
                                             kPriorMaxSample);
  int64_t m = set.prior_sample > 0 ? set.prior_sample : std::min(wanted, n / 4);
  m = std::min({m, static_cast<int64_t>(prior_bound_max_sample(shared_optin)), n, room / std::max<int64_t>(1, plan.d)});
  m &= ~int64_t{3};  // whole float4 loads of the sample's distances
  if (m < 64) return pp;
  const double mean = static_cast<double>(m) * p, sd = std::sqrt(static_cast<double>(m) * p * (1 - p));
  int64_t rank = set.prior_rank > 0 ? set.prior_rank : static_cast<int64_t>(std::ceil(mean + 4 * sd)) + 1;
  // Near the median the seed's bound is about as good: not worth the GEMM.
  if (set.prior_sample < 0 && set.prior_rank <= 0 && rank > m / 2) return pp;
  pp.sample = static_cast<int>(m);
  pp.rank = static_cast<int>(std::min(rank, m));
  return pp;
}

void DeviceEngine::translate_rows_by(const std::vector<float>& offset, bool keep_unmoved) {
  DeviceScope scope(ctx_.device);
  translation_.reset(offset.size(), "allocating the rows' translation");
  if (keep_unmoved && plan_.resident)
    unmoved_rows_.reset(static_cast<size_t>(plan_.n) * static_cast<size_t>(plan_.d), "allocating the unmoved rows");
  cuda_check(cudaMemcpy(translation_.data(), offset.data(), offset.size() * sizeof(float), cudaMemcpyHostToDevice),
             "copying the rows' translation to the GPU");
}

double DeviceEngine::host_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_t0_).count();
}

DeviceEngine::DeviceEngine(int device, const float* host_rows, const TilePlan& plan, bool keep_self, bool force_block,
                           exact::DotArithmetic arithmetic, TileSelection* selection)
    : ctx_(context_on(device)),
      lock_(ctx_.busy),
      host_rows_(host_rows),
      plan_(plan),
      keep_self_(keep_self),
      force_block_(force_block),
      tensor_(arithmetic == exact::DotArithmetic::Tf32),
      strips_(plan.fused ? arithmetic : exact::DotArithmetic::Float32),
      selection_(selection),
      timeline_(settings().timeline) {
  cuda_check(cudaSetDevice(device), "selecting the device");
  if (selection && plan.fused) throw Error("a paper strategy's selection needs a cuBLAS plan, not the fused kernel");
  // The TF32 compute type is asked for explicitly in each GEMM; the default
  // math mode lets cuBLAS honour it (pedantic is restored afterwards).
  cublas_check(cublasSetMathMode(ctx_.cublas, tensor_ ? CUBLAS_DEFAULT_MATH : engine_math_mode()),
               "setting the cuBLAS math mode");
  const int64_t n = plan.n, d = plan.d;
  const size_t nk = static_cast<size_t>(n) * plan.k;
  cublas_check(cublasSetWorkspace(ctx_.cublas, ctx_.workspace(plan.workspace), plan.workspace),
               "setting the cuBLAS workspace");

  list_dist_.reset(nk, "allocating the neighbour lists");
  list_index_.reset(nk, "allocating the neighbour lists");
  fill_.reset(static_cast<size_t>(n), "allocating the neighbour lists");
  thr_.reset(static_cast<size_t>(n), "allocating the neighbour lists");
  if (plan.pending > 0 && !selection) {
    const size_t room = static_cast<size_t>(n) * static_cast<size_t>(plan.pending);
    pend_dist_.reset(room, "allocating the lists' pending room");
    pend_index_.reset(room, "allocating the lists' pending room");
    pend_fill_.reset(static_cast<size_t>(n), "allocating the lists' pending room");
  }

  const int64_t nb = plan.blocks();
  // Streaming: the two column windows, then the panel.
  const int64_t slots = plan.resident ? nb : 2 * plan.window() + plan.panel();
  const size_t slot_rows = plan.resident ? static_cast<size_t>(n) : static_cast<size_t>(slots) * plan.T;
  rows_.reset(slot_rows * d, "allocating device memory for the rows");
  norms_.reset(slot_rows, "allocating device memory for the row norms");
  if (!plan.resident) all_norms_.reset(static_cast<size_t>(n), "allocating device memory for the row norms");
  if (plan.fused) {
    // Zeroed once: the padding features (c >= d) must add nothing to the
    // dot products, and the unused columns of a last, short block are read
    // (their entries are never reported).
    rows_t_.reset(static_cast<size_t>(slots) * plan.T * fused_dpad(d), "allocating the transposed row blocks");
    cuda_check(cudaMemsetAsync(rows_t_.data(), 0, rows_t_.bytes(), ctx_.copy), "clearing the transposed row blocks");
  }
  if (!plan.fused)
    for (auto& t : tiles_) {
      // Zeroed once: the filter reads a column's rows four at a time, and
      // the rows past a short tile's last (masked, never reported) are
      // never written by cuBLAS; cleared, compute-sanitizer's initcheck
      // reports only real reads of unwritten memory.
      t.reset(static_cast<size_t>(plan.T) * plan.W, "allocating a distance tile");
      cuda_check(cudaMemsetAsync(t.data(), 0, t.bytes(), ctx_.copy), "clearing a distance tile");
    }
  const size_t cand = 2 * static_cast<size_t>(plan.T) * plan.W;
  sets_ = plan.sets;
  if (sets_ < 2 || sets_ > kMaxSets)
    throw Error("internal: a tile plan with " + std::to_string(sets_) + " candidate sets");
  // A strategy's selection keeps its own candidates.
  for (int i = 0; i < (selection ? 0 : sets_); ++i) {
    cand_dist_[i].reset(cand, "allocating the candidate buffers");
    cand_index_[i].reset(cand, "allocating the candidate buffers");
    cand_count_[i].reset(static_cast<size_t>(plan.T) + plan.W, "allocating the candidate buffers");
    dirty_[i].reset(static_cast<size_t>(plan.T) + plan.W, "allocating the candidate buffers");
  }
  n_dirty_.reset(kCounters, "allocating the candidate buffers");
  cand_total_.reset(1, "allocating the candidate buffers");

  block_slot_.assign(static_cast<size_t>(nb), -1);
  if (plan.resident) {
    slot_ready_ = std::vector<Event>(static_cast<size_t>(nb));
    slot_waited_.assign(static_cast<size_t>(nb), 0);
  } else {
    panel_slot_.assign(static_cast<size_t>(nb), -1);
    regions_[0].first_slot = 0;
    regions_[1].first_slot = plan.window();
    regions_[kPanel].first_slot = 2 * plan.window();
  }

  cudaStream_t s = ctx_.select;
  for (int i = 0; i < (selection ? 0 : sets_); ++i)
    cuda_check(cudaMemsetAsync(cand_count_[i].data(), 0, cand_count_[i].bytes(), s), "clearing the candidate counters");
  cuda_check(cudaMemsetAsync(n_dirty_.data(), 0, n_dirty_.bytes(), s), "clearing the candidate counters");
  cuda_check(cudaMemsetAsync(cand_total_.data(), 0, cand_total_.bytes(), s), "clearing the candidate counters");
  launch_init_lists(lists(), s);
}

DeviceEngine::~DeviceEngine() {
  // Work may still be queued when an error or a cancellation unwinds: let it
  // finish before the buffers it uses are freed and the context is passed on.
  cudaSetDevice(ctx_.device);
  cudaDeviceSynchronize();
  for (int i = 0; i < DeviceContext::kStaging; ++i) ctx_.staging_used[i] = false;
  cublasSetMathMode(ctx_.cublas, engine_math_mode());
}

ListsView DeviceEngine::lists() const {
  ListsView l;
  l.dist = list_dist_.data();
  l.index = list_index_.data();
  l.fill = fill_.data();
  l.thr = thr_.data();
  l.n = plan_.n;
  l.k = plan_.k;
  if (pend_fill_.data()) {
    l.pend_dist = pend_dist_.data();
    l.pend_index = pend_index_.data();
    l.pend_fill = pend_fill_.data();
    l.pend_cap = plan_.pending;
  }
  return l;
}

int64_t DeviceEngine::seed_batch(const TilePlan& plan) {
  // Resident: as many blocks as a candidate set holds (2 W / T); streaming:
  // a column window's.
  if (!plan.fused) return 1;
  return plan.resident ? std::max<int64_t>(1, 2 * plan.W / plan.T) : plan.window();
}

std::vector<std::pair<int64_t, int64_t>> DeviceEngine::windows(const TilePlan& plan, int64_t from) {
  std::vector<std::pair<int64_t, int64_t>> w;
  const int64_t nb = plan.blocks(), m = plan.window();
  for (int64_t b = from; b < nb; b += m) w.emplace_back(b, std::min(nb, b + m));
  return w;
}

uint64_t DeviceEngine::tiles_for(const TilePlan& plan, const std::vector<int64_t>& strips) {
  const int64_t batch = seed_batch(plan);
  uint64_t t = static_cast<uint64_t>((plan.blocks() + batch - 1) / batch);  // the seeds
  if (!plan.resident) {
    // Each panel block against each later column window (as run() does).
    const size_t panel = static_cast<size_t>(plan.panel());
    for (size_t p0 = 0; p0 < strips.size(); p0 += panel) {
      const size_t p1 = std::min(strips.size(), p0 + panel);
      const int64_t first = *std::min_element(strips.begin() + static_cast<std::ptrdiff_t>(p0),
                                              strips.begin() + static_cast<std::ptrdiff_t>(p1));
      for (auto [J0, J1] : windows(plan, first + 1))
        for (size_t i = p0; i < p1; ++i) t += std::max(J0, strips[i] + 1) < J1;
    }
    return t;
  }
  for (int64_t I : strips) {
    const int64_t left = plan.n - (I + 1) * plan.T;
    if (left > 0) t += static_cast<uint64_t>((left + plan.W - 1) / plan.W);
  }
  return t;
}

void DeviceEngine::host_copy(void* dst, const void* src, size_t bytes) {
  // Staging is the one host-side copy of the pipeline; spread it over a few
  // cores so it keeps up with the DMA, with non-temporal stores so the two do
  // not slow each other down (utils/host_copy.h). A row block is often a
  // single megabyte (2048 rows of 128 floats): pieces of at least 256 KB, at
  // most one a thread, so it too goes over several cores (with 2 MB pieces
  // it went over one, and the upload fell behind the DMA).
  constexpr size_t kMinPiece = size_t{256} << 10;
  staging_copy(dst, src, bytes, std::min(8, hardware_threads(0)), kMinPiece, ctx_.upload_pool);
}

void DeviceEngine::upload_blocks(int64_t b, int64_t blocks, float* rows, float* norms, float* rows_t) {
  // Consecutive blocks are consecutive rows on both sides: one staged copy
  // in chunks of up to kChunk (two in flight: one is filled on the host while
  // the other's DMA runs), then each block's norms and transpose.
  constexpr size_t kChunk = size_t{8} << 20;
  const int64_t d = plan_.d, T = plan_.T;
  const int64_t r0 = b * T;
  const int64_t count = std::min<int64_t>(blocks * T, plan_.n - r0);
  const char* src = reinterpret_cast<const char*>(host_rows_ + r0 * d);
  const size_t bytes = static_cast<size_t>(count) * d * sizeof(float);
  const double issued = timeline_ ? host_ms() : 0;
  for (size_t off = 0; off < bytes;) {
    const size_t len = std::min({kChunk, DeviceContext::kStagingBytes, bytes - off});
    const int s = staging_next_;
    staging_next_ = (s + 1) % DeviceContext::kStaging;
    if (ctx_.staging_used[s]) ctx_.staging_free[s].synchronize("copying rows to the GPU");
    unsigned char* staging = ctx_.staging(s);
    host_copy(staging, src + off, len);
    cuda_check(cudaMemcpyAsync(reinterpret_cast<char*>(rows) + off, staging, len, cudaMemcpyHostToDevice, ctx_.copy),
               "copying rows to the GPU");
    ctx_.staging_free[s].record(ctx_.copy);
    ctx_.staging_used[s] = true;
    off += len;
  }
  if (unmoved_rows_.size())
    cuda_check(cudaMemcpyAsync(unmoved_rows_.data() + r0 * d, rows, bytes, cudaMemcpyDeviceToDevice, ctx_.copy),
               "keeping the unmoved rows");
  if (translation_.size()) launch_translate_rows(rows, count, d, translation_.data(), ctx_.copy);
  for (int64_t z = 0; z < blocks; ++z) {
    const int64_t at = z * T, rz = std::min<int64_t>(T, count - at);
    if (rz <= 0) break;
    launch_row_norms(rows + at * d, rz, d, norms + at, ctx_.copy);
    if (rows_t)
      launch_transpose_block(rows + at * d, static_cast<int>(rz), d, rows_t + z * T * fused_dpad(d), T,
                             strips_ == exact::DotArithmetic::Tf32, ctx_.copy);
    if (!plan_.resident)
      cuda_check(cudaMemcpyAsync(all_norms_.data() + r0 + at, norms + at, static_cast<size_t>(rz) * sizeof(float),
                                 cudaMemcpyDeviceToDevice, ctx_.copy),
                 "keeping the row norms");
  }
  stats_.h2d_bytes += bytes;
  if (timeline_) {
    stats_.upload_times.push_back({b, issued, host_ms(), 0});
    upload_done_.emplace_back();
    upload_done_.back().record(ctx_.copy);
  }
}

void DeviceEngine::upload_resident(int64_t b, int64_t blocks) {
  const size_t T = static_cast<size_t>(plan_.T), d = static_cast<size_t>(plan_.d);
  blocks = std::min<int64_t>(blocks, plan_.blocks() - b);
  // Skip blocks already there (all or none: callers upload whole batches).
  if (blocks <= 0 || block_slot_[static_cast<size_t>(b)] >= 0) return;
  upload_blocks(b, blocks, rows_.data() + b * T * d, norms_.data() + b * T,
                plan_.fused ? rows_t_.data() + b * T * fused_dpad(plan_.d) : nullptr);
  for (int64_t z = b; z < b + blocks; ++z) {
    slot_ready_[static_cast<size_t>(z)].record(ctx_.copy);
    slot_waited_[static_cast<size_t>(z)] = 0;
    block_slot_[static_cast<size_t>(z)] = z;
  }
}

void DeviceEngine::ensure_block(int64_t b, int stream) {
  if (block_slot_[static_cast<size_t>(b)] < 0) upload_resident(b, 1);
  const char bit = static_cast<char>(1 << stream);
  if (!(slot_waited_[static_cast<size_t>(b)] & bit)) {
    (stream ? ctx_.gemm2 : ctx_.gemm).wait(slot_ready_[static_cast<size_t>(b)]);
    slot_waited_[static_cast<size_t>(b)] |= bit;
  }
}

// ---- Streaming: the column windows and the panel ----------------------------

// Blocks [b, b + blocks) into consecutive slots from `slot`, part of region
// `region`, once every tile that read the region before is done.
void DeviceEngine::upload_region(int64_t b, int64_t blocks, int slot) {
  const size_t T = static_cast<size_t>(plan_.T), d = static_cast<size_t>(plan_.d), z = static_cast<size_t>(slot);
  upload_blocks(b, blocks, rows_.data() + z * T * d, norms_.data() + z * T,
                plan_.fused ? rows_t_.data() + z * T * static_cast<size_t>(fused_dpad(plan_.d)) : nullptr);
}

void DeviceEngine::load_window(int w, int64_t b0, int64_t b1) {
  Region& r = regions_[w];
  for (int s = 0; s < 3; ++s)
    if (r.recorded[s]) ctx_.copy.wait(r.free[s]);
  upload_region(b0, b1 - b0, r.first_slot);
  r.ready.record(ctx_.copy);
  r.waited = 0;
  r.b0 = b0, r.b1 = b1;
}

void DeviceEngine::load_panel(const int64_t* strips, size_t count) {
  Region& r = regions_[kPanel];
  for (int s = 0; s < 3; ++s)
    if (r.recorded[s]) ctx_.copy.wait(r.free[s]);
  std::fill(panel_slot_.begin(), panel_slot_.end(), -1);
  // Runs of consecutive blocks are consecutive rows: one upload each.
  for (size_t i = 0; i < count;) {
    size_t j = i + 1;
    while (j < count && strips[j] == strips[j - 1] + 1) ++j;
    upload_region(strips[i], static_cast<int64_t>(j - i), r.first_slot + static_cast<int>(i));
    for (size_t q = i; q < j; ++q) panel_slot_[static_cast<size_t>(strips[q])] = r.first_slot + static_cast<int>(q);
    i = j;
  }
  r.ready.record(ctx_.copy);
  r.waited = 0;
}

// GEMM stream gs waits for the region's upload (once per upload).
void DeviceEngine::use_region(int region, int gs) {
  Region& r = regions_[region];
  const char bit = static_cast<char>(1 << gs);
  if (!(r.waited & bit)) {
    (gs ? ctx_.gemm2 : ctx_.gemm).wait(r.ready);
    r.waited |= bit;
  }
}

// A tile queued on `stream` (0, 1: GEMM streams; 2: selection) read the region.
void DeviceEngine::region_read(int region, int stream) {
  Region& r = regions_[region];
  const Stream& s = stream == 2 ? ctx_.select : (stream ? ctx_.gemm2 : ctx_.gemm);
  r.free[stream].record(s);
  r.recorded[stream] = true;
}

int DeviceEngine::gemm_stream(uint64_t t) const {
  // Fused kernels of alternate tiles go to two streams: a tile's blocks start
  // while the previous tile's last ones run (streamed regions record their
  // last reader on each stream). cuBLAS is bound to one stream.
  return plan_.fused ? static_cast<int>(t % 2) : 0;
}

CandidatesView DeviceEngine::candidate_set(uint64_t t, int row_stride) {
  const int set = static_cast<int>(t % sets_);
  CandidatesView cv;
  cv.dist = cand_dist_[set].data();
  cv.index = cand_index_[set].data();
  cv.count = cand_count_[set].data();
  cv.dirty = dirty_[set].data();
  cv.n_dirty = n_dirty_.data();
  cv.total = cand_total_.data();
  cv.T = plan_.T;
  cv.W = row_stride;
  return cv;
}

// The tile's operands: resident rows are all on the device (the blocks the
// tile reads are made sure of on its GEMM stream); streamed blocks are
// brought into slots, keeping the other operand's slot.
DeviceEngine::TileOperands DeviceEngine::tile_operands(const TileJob& job) {
  const int64_t T = plan_.T, d = plan_.d;
  TileOperands op;
  ensure_block(job.I, job.gs);
  for (int64_t b = job.c0 / T; b <= (job.c0 + job.cols - 1) / T; ++b) ensure_block(b, job.gs);
  op.a_rows = rows_.data() + job.r0 * d;
  op.a_norms = norms_.data() + job.r0;
  op.b_rows = rows_.data() + job.c0 * d;
  op.b_norms = norms_.data() + job.c0;
  return op;
}

// Streamed operands: the rows in their slot, the columns in consecutive
// slots from slot_b (a window's, or the panel's for a seed), waited for on
// the tile's GEMM stream.
DeviceEngine::TileOperands DeviceEngine::streamed_operands(const TileJob& job, const Streamed& where) {
  const size_t T = static_cast<size_t>(plan_.T), d = static_cast<size_t>(plan_.d);
  use_region(where.region_a, job.gs);
  if (where.region_b != where.region_a) use_region(where.region_b, job.gs);
  TileOperands op;
  op.slot_a = where.slot_a, op.slot_b = where.slot_b;
  op.a_rows = rows_.data() + static_cast<size_t>(op.slot_a) * T * d;
  op.a_norms = norms_.data() + static_cast<size_t>(op.slot_a) * T;
  op.b_rows = rows_.data() + static_cast<size_t>(op.slot_b) * T * d;
  op.b_norms = norms_.data() + static_cast<size_t>(op.slot_b) * T;
  return op;
}

// The fused kernel: dot products, distances and the filter in one launch on
// the tile's GEMM stream, against the transposed blocks; its end is the
// selection stream's start (the merge).
void DeviceEngine::fused_tile(const TileJob& job, const TileOperands& op, const CandidatesView& cv, int counter,
                              const DeviceContext::TileEvents* before) {
  const int64_t T = plan_.T;
  DeviceContext::TileEvents& ev = ctx_.ring[job.t % DeviceContext::kRing];
  const Stream& g = job.gs ? ctx_.gemm2 : ctx_.gemm;
  if (before) g.wait(before->sel_end);
  ev.gemm_start.record(g);
  FusedTileArgs f;
  const int64_t dpad = fused_dpad(plan_.d);
  f.ldt = static_cast<int>(T), f.dpad = static_cast<int>(dpad), f.block_stride = T * dpad;
  if (plan_.resident) {
    f.at = rows_t_.data() + job.I * T * dpad;
    f.bt = rows_t_.data() + (job.c0 / T) * T * dpad;
  } else {
    f.at = rows_t_.data() + static_cast<size_t>(op.slot_a) * T * dpad;
    f.bt = rows_t_.data() + static_cast<size_t>(op.slot_b) * T * dpad;
  }
  f.rows = static_cast<int>(job.rows), f.cols = static_cast<int>(job.cols);
  f.r0 = static_cast<int>(job.r0), f.c0 = static_cast<int>(job.c0);
  f.col_role_from = job.c0 == job.r0 ? static_cast<int>(job.rows) : 0;
  f.row_norms = op.a_norms, f.col_norms = op.b_norms, f.thr = thr_.data();
  f.keep_self = keep_self_;  // never dense: the fused path seeds in seed_tiles()
  f.strips = strips_;
  launch_fused_tile(f, cv, counter, g);
  ev.gemm_end.record(g);
  ev.filter_end.record(g);
  ctx_.select.wait(ev.gemm_end);
  ev.sel_start.record(ctx_.select);
}

// The tile's dot products by cuBLAS into `dots` (column-major, leading
// dimension T), on the stream cuBLAS is bound to.
void DeviceEngine::tile_gemm(const TileJob& job, const TileOperands& op, float* dots) {
  const int m = static_cast<int>(job.rows), n = static_cast<int>(job.cols), d = static_cast<int>(plan_.d);
  const int ld = static_cast<int>(plan_.T);
  const float one = 1.f, zero = 0.f;
  if (tensor_) {
    // Inputs rounded to TF32 on tensor cores, float32 accumulation: the
    // error bound of manifold/exact/error_bound.h (u_in = 2^-10) covers it.
    cublas_check(cublasGemmEx(ctx_.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, d, &one, op.a_rows, CUDA_R_32F, d, op.b_rows,
                              CUDA_R_32F, d, &zero, dots, CUDA_R_32F, ld, CUBLAS_COMPUTE_32F_FAST_TF32,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (TF32) on a distance tile");
  } else {
    cublas_check(cublasSgemm(ctx_.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, d, &one, op.a_rows, d, op.b_rows, d, &zero,
                             dots, ld),
                 "cublasSgemm on a distance tile");
  }
}

// cuBLAS then the filter (or a paper strategy's selection): the GEMM on the
// tile's GEMM stream, the filter on the selection stream once it is done.
void DeviceEngine::cublas_tile(const TileJob& job, const TileOperands& op, const CandidatesView& cv, int counter,
                               const DeviceContext::TileEvents* before) {
  DeviceContext::TileEvents& ev = ctx_.ring[job.t % DeviceContext::kRing];
  const Stream& g = job.gs ? ctx_.gemm2 : ctx_.gemm;
  const Stream& sel = ctx_.select;
  float* dots = tiles_[job.t % 2].data();
  if (before) g.wait(before->filter_end);
  ev.gemm_start.record(g);
  tile_gemm(job, op, dots);
  ev.gemm_end.record(g);
  sel.wait(ev.gemm_end);
  ev.sel_start.record(sel);
  TileView view;
  view.dots = dots;
  view.ld = static_cast<int>(plan_.T);
  view.rows = static_cast<int>(job.rows);
  view.cols = static_cast<int>(job.cols);
  view.r0 = static_cast<int>(job.r0);
  view.c0 = static_cast<int>(job.c0);
  view.col_role_from = job.c0 == job.r0 ? static_cast<int>(job.rows) : 0;
  view.row_norms = op.a_norms;
  view.col_norms = op.b_norms;
  view.keep_self = keep_self_;
  view.dense = job.dense;
  if (selection_) {
    selection_->select(view, lists(), thr_.data(), sel, ev.filter_end);
  } else {
    launch_filter_tile(view, thr_.data(), cv, counter, sel);
    ev.filter_end.record(sel);
  }
}

void DeviceEngine::tile(uint64_t t, int64_t I, int64_t c0, int64_t cols, bool dense, const Streamed* where) {
  const int64_t r0 = I * plan_.T;
  const TileJob job{t, I, r0, std::min<int64_t>(plan_.T, plan_.n - r0), c0, cols, dense, gemm_stream(t)};
  if (timeline_) issued_.push_back({t, I, c0, cols, dense, job.gs, host_ms(), 0, 0, 0, 0});
  const TileOperands op = where ? streamed_operands(job, *where) : tile_operands(job);

  const CandidatesView cv = candidate_set(t, plan_.W);
  const int counter = static_cast<int>(t % kCounters);
  // The candidate set (and, for cuBLAS, the tile buffer) of tile t-2 must be
  // consumed before tile t overwrites it.
  // The fused kernel writes candidate set t % sets_, last used by tile t - sets_.
  const uint64_t lag = plan_.fused ? static_cast<uint64_t>(sets_) : 2;
  const DeviceContext::TileEvents* before = t >= lag ? &ctx_.ring[(t - lag) % DeviceContext::kRing] : nullptr;
  if (plan_.fused) fused_tile(job, op, cv, counter, before);
  else
    cublas_tile(job, op, cv, counter, before);

  const Stream& sel = ctx_.select;
  if (where) {
    // The last reader of the tile's rows: the fused kernel, or the filter
    // (after the GEMM, on the selection stream).
    const int reader = plan_.fused ? job.gs : 2;
    region_read(where->region_a, reader);
    if (where->region_b != where->region_a) region_read(where->region_b, reader);
  }
  // Tiles t + 1 .. t + sets_ - 1 may hold their counters while this merge
  // runs; tile t + sets_'s is free, and its kernel waits for this merge.
  if (!selection_)
    launch_merge_tile(lists(), cv, counter, static_cast<int>((t + sets_) % kCounters), static_cast<int>(r0),
                      static_cast<int>(c0), force_block_, std::max(plan_.T, plan_.W), sel, dense);
  ctx_.ring[t % DeviceContext::kRing].sel_end.record(sel);
  stats_.gemm_flop += 2.0 * static_cast<double>(job.rows) * static_cast<double>(cols) * static_cast<double>(plan_.d);
}

void DeviceEngine::seed_tiles(uint64_t t, int64_t b0, int64_t blocks, const Streamed* where) {
  const int64_t T = plan_.T, d = plan_.d, dpad = fused_dpad(d);
  const int64_t r0 = b0 * T;
  const int64_t rows = std::min<int64_t>(blocks * T, plan_.n - r0);
  DeviceContext::TileEvents& ev = ctx_.ring[t % DeviceContext::kRing];
  const Stream& sel = ctx_.select;
  const int gs = gemm_stream(t);
  const Stream& g = gs ? ctx_.gemm2 : ctx_.gemm;
  if (timeline_) issued_.push_back({t, b0, r0, rows, true, gs, host_ms(), 0, 0, 0, 0});
  const float *at, *norms;
  int slot = -1;
  if (!where) {
    for (int64_t b = b0; b < b0 + blocks; ++b) ensure_block(b, gs);
    at = rows_t_.data() + r0 * dpad;
    norms = norms_.data() + r0;
  } else {
    use_region(where->region_a, gs);
    slot = where->slot_a;
    at = rows_t_.data() + static_cast<size_t>(slot) * T * dpad;
    norms = norms_.data() + static_cast<size_t>(slot) * T;
  }
  // Row i of the batch at i * T of the candidate set (2 T W entries, so up
  // to 2 W / T blocks a batch).
  const CandidatesView cv = candidate_set(t, static_cast<int>(T));
  if (t >= static_cast<uint64_t>(sets_)) g.wait(ctx_.ring[(t - sets_) % DeviceContext::kRing].sel_end);
  ev.gemm_start.record(g);
  FusedTileArgs f;
  f.ldt = static_cast<int>(T), f.dpad = static_cast<int>(dpad), f.block_stride = T * dpad;
  f.at = f.bt = at;
  f.rows = f.cols = static_cast<int>(rows);
  f.r0 = f.c0 = static_cast<int>(r0);
  f.col_role_from = static_cast<int>(rows);
  f.row_norms = f.col_norms = norms, f.thr = thr_.data();
  f.keep_self = keep_self_, f.dense = true, f.batch = static_cast<int>(blocks);
  launch_fused_tile(f, cv, static_cast<int>(t % kCounters), g);
  ev.gemm_end.record(g);
  ev.filter_end.record(g);
  sel.wait(ev.gemm_end);
  ev.sel_start.record(sel);
  if (where) region_read(where->region_a, gs);
  launch_merge_seeds(lists(), cv, static_cast<int>((t + sets_) % kCounters), static_cast<int>(r0),
                     static_cast<int>(rows), static_cast<int>(T), keep_self_, force_block_, sel);
  ev.sel_end.record(sel);
  for (int64_t b = b0; b < b0 + blocks; ++b) {
    // The 128 x 128 kernel blocks on and above each tile's diagonal.
    const double kb = static_cast<double>((std::min<int64_t>(T, plan_.n - b * T) + 127) / 128);
    stats_.gemm_flop += 2.0 * 128 * 128 * kb * (kb + 1) / 2 * static_cast<double>(d);
  }
}

void DeviceEngine::prior_bounds(const PriorBoundPlan& pp) {
  const int64_t n = plan_.n, d = plan_.d, nb = plan_.blocks();
  const int m = pp.sample;
  const Stream& g = ctx_.gemm;
  upload_resident(0, nb);
  for (int64_t b = 0; b < nb; ++b) ensure_block(b, 0);
  prior_start_.record(g);
  // Scratch: the sample's rows and norms in candidate set 1, the dot
  // products in set 0 (the seeds' kernels wait for the bounds below).
  float* sample = cand_dist_[1].data();
  float* sample_norms = reinterpret_cast<float*>(cand_index_[1].data());
  float* dots = cand_dist_[0].data();
  launch_gather_sample(rows_.data(), norms_.data(), n, d, m, sample, sample_norms, g);
  const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(cand_dist_[0].size()) / m);
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int count = static_cast<int>(std::min(chunk, n - r0));
    dot_products(sample, m, rows_.data() + r0 * d, count, dots, m, g);
    PriorBoundArgs a;
    a.dots = dots, a.m = m, a.count = count, a.r0 = r0;
    a.row_norms = norms_.data(), a.sample_norms = sample_norms, a.rank = pp.rank, a.thr = thr_.data();
    launch_prior_bound(a, g);
  }
  prior_end_.record(g);
  ctx_.gemm2.wait(prior_end_);
  ctx_.select.wait(prior_end_);
  stats_.prior_sample = m, stats_.prior_rank = pp.rank;
}

void DeviceEngine::complete(uint64_t t, Progress& progress, const std::atomic<bool>& stop) {
  DeviceContext::TileEvents& ev = ctx_.ring[t % DeviceContext::kRing];
  ev.sel_end.synchronize("computing a distance tile");
  // The time the dot-product kernels ran, counted once where the two
  // streams' kernels overlap (tiles complete in order; only neighbours overlap).
  const double start = ev.gemm_start.since(ctx_.loop_start), end = ev.gemm_end.since(ctx_.loop_start);
  stats_.gemm_ms += std::max(0.0, end - std::max(start, gemm_busy_until_));
  gemm_busy_until_ = std::max(gemm_busy_until_, end);
  stats_.select_ms += ev.sel_end.since(ev.sel_start);
  if (timeline_) {
    EngineStats::TileTimes x = issued_[t];
    x.gemm_start = start, x.gemm_end = end;
    x.sel_start = ev.sel_start.since(ctx_.loop_start), x.sel_end = ev.sel_end.since(ctx_.loop_start);
    stats_.tile_times.push_back(x);
  }
  ++stats_.tiles;
  progress.advance(1);
  if (stop.load(std::memory_order_relaxed)) throw Cancelled();
}

void DeviceEngine::queue_tile(LoopCursor& at, int64_t I, int64_t c0, int64_t cols, bool dense, const Streamed* where) {
  if (at.t >= DeviceContext::kRing) complete(at.t - DeviceContext::kRing, at.progress, at.stop);
  tile(at.t++, I, c0, cols, dense, where);
}

void DeviceEngine::queue_seed_tiles(LoopCursor& at, int64_t b0, int64_t blocks, const Streamed* where) {
  if (at.t >= DeviceContext::kRing) complete(at.t - DeviceContext::kRing, at.progress, at.stop);
  seed_tiles(at.t++, b0, blocks, where);
}

void DeviceEngine::report_final(LoopCursor& at, int64_t rows) {
  launch_flush_pending(lists(), at.flushed, rows, ctx_.select);
  at.flushed = rows;
  at.rows_final(rows, ctx_.select);
}

void DeviceEngine::run(const std::vector<int64_t>& strips, Progress& progress, const std::atomic<bool>& stop,
                       const RowsFinal& rows_final) {
  cuda_check(cudaSetDevice(ctx_.device), "selecting the device");
  ctx_.loop_start.record(ctx_.copy);
  if (timeline_) {
    // One origin for host and GPU times (timeline runs only: it waits).
    ctx_.loop_start.synchronize("starting the tiles");
    host_t0_ = std::chrono::steady_clock::now();
    stats_.tile_times.clear(), stats_.upload_times.clear(), issued_.clear(), upload_done_.clear();
  }
  gemm_busy_until_ = 0;
  LoopCursor at{progress, stop, rows_final};
  seed_every_block(at, std::set<int64_t>(strips.begin(), strips.end()));
  Event seeds_end;
  seeds_end.record(ctx_.select);
  if (plan_.resident) resident_strips(at, strips);
  else
    streamed_strips(at, strips);
  finish_loop(at, seeds_end);
}

void DeviceEngine::seed_every_block(LoopCursor& at, const std::set<int64_t>& owned) {
  const int64_t T = plan_.T, n = plan_.n, nb = plan_.blocks();
  // Seeds: each diagonal tile fills its rows' lists, so every row has a
  // bound before the strips begin and they pass only a few candidates.
  // With the fused kernel, blocks are uploaded and seeded a batch at a time
  // (resident: as many as a candidate set holds, 2 W / T; streaming: a
  // column window), one launch and one merge each: one block at a time, the
  // seeds waited on each block's upload and ran on a fraction of the GPU
  // (bench/gpu/RESULTS.md).
  // Large k, every row here and every strip this device's: each row's
  // bound from a sample of columns before the seeds (prior_bound_plan).
  stats_.prior_sample = stats_.prior_rank = 0;
  stats_.prior_ms = 0;
  if (plan_.resident && !selection_ && static_cast<int64_t>(owned.size()) == nb)
    if (const PriorBoundPlan pp = prior_bound_plan(plan_, ctx_.shared_optin); pp.sample > 0) prior_bounds(pp);
  const int64_t batch = seed_batch(plan_);
  for (int64_t b0 = 0; b0 < nb; b0 += batch) {
    const int64_t blocks = std::min(batch, nb - b0);
    if (!plan_.resident) {
      // Through a column window: the batch's blocks (or one cuBLAS seed).
      load_window(at.w, b0, b0 + blocks);
      const int first = regions_[at.w].first_slot;
      const Streamed where{first, first, at.w, at.w};
      if (plan_.fused) queue_seed_tiles(at, b0, blocks, &where);
      else
        queue_tile(at, b0, b0 * T, std::min<int64_t>(T, n - b0 * T), true, &where);
      at.w ^= 1;
    } else if (plan_.fused) {
      upload_resident(b0, blocks);
      queue_seed_tiles(at, b0, blocks, nullptr);
    } else {
      queue_tile(at, b0, b0 * T, std::min<int64_t>(T, n - b0 * T), true, nullptr);
    }
    // A block another device owns keeps the bound only: its entries are
    // that device's to report.
    for (int64_t I = b0; I < b0 + blocks; ++I) {
      const int64_t r0 = I * T, rows = std::min<int64_t>(T, n - r0);
      if (!owned.count(I))
        cuda_check(cudaMemsetAsync(fill_.data() + r0, 0, static_cast<size_t>(rows) * sizeof(int), ctx_.select),
                   "clearing seed entries");
    }
  }
}

void DeviceEngine::resident_strips(LoopCursor& at, const std::vector<int64_t>& strips) {
  const int64_t T = plan_.T, n = plan_.n;
  int64_t final_blocks = 0;  // strips 0 .. final_blocks - 1 all issued here
  for (int64_t I : strips) {
    const int64_t first = (I + 1) * T;
    for (int64_t c0 = first; c0 < n; c0 += plan_.W)
      queue_tile(at, I, c0, std::min<int64_t>(plan_.W, n - c0), false, nullptr);
    // Later strips' tiles hold only later rows (their columns start after
    // their row block), so rows of blocks 0..I are done.
    if (at.rows_final && I == final_blocks) report_final(at, std::min(n, ++final_blocks * T));
  }
}

void DeviceEngine::streamed_strips(LoopCursor& at, const std::vector<int64_t>& strips) {
  const int64_t T = plan_.T, n = plan_.n;
  // Panels: `panel` row blocks of this device stay in their slots while
  // every later column block is copied once, a window of W / T consecutive
  // blocks at a time, and meets the whole panel: each tile is a panel block
  // against the part of the window after it. A copied block then serves
  // `panel` tiles, which keeps the copies far below the GEMM time. The next
  // window is uploaded while the tiles read this one.
  const size_t panel = static_cast<size_t>(plan_.panel());
  for (size_t p0 = 0; p0 < strips.size(); p0 += panel) {
    const size_t p1 = std::min(strips.size(), p0 + panel);
    const int64_t first = *std::min_element(strips.begin() + static_cast<std::ptrdiff_t>(p0),
                                            strips.begin() + static_cast<std::ptrdiff_t>(p1));
    load_panel(strips.data() + p0, p1 - p0);
    const auto wins = windows(plan_, first + 1);
    if (!wins.empty()) load_window(at.w, wins[0].first, wins[0].second);
    for (size_t i = 0; i < wins.size(); ++i) {
      const auto [J0, J1] = wins[i];
      if (i + 1 < wins.size()) load_window(at.w ^ 1, wins[i + 1].first, wins[i + 1].second);
      for (size_t q = p0; q < p1; ++q) {
        const int64_t I = strips[q], c = std::max(J0, I + 1);
        if (c >= J1) continue;
        const Streamed where{panel_slot_[static_cast<size_t>(I)], regions_[at.w].first_slot + static_cast<int>(c - J0),
                             kPanel, at.w};
        queue_tile(at, I, c * T, std::min(J1 * T, n) - c * T, false, &where);
      }
      at.w ^= 1;
    }
    // Later panels' tiles hold only later rows: where this device's strips
    // are every block up to this panel's last, those rows are done.
    if (at.rows_final && strips[p1 - 1] == static_cast<int64_t>(p1) - 1)
      report_final(at, std::min(n, static_cast<int64_t>(p1) * T));
  }
}

void DeviceEngine::finish_loop(LoopCursor& at, const Event& seeds_end) {
  constexpr uint64_t R = DeviceContext::kRing;
  // Every other row's pending entries (the rows of later blocks, and those
  // of other devices' blocks, which this device's tiles fed as columns).
  launch_flush_pending(lists(), at.flushed, plan_.n, ctx_.select);
  for (uint64_t u = at.t >= R ? at.t - R : 0; u < at.t; ++u) complete(u, at.progress, at.stop);
  ctx_.loop_end.record(ctx_.select);
  ctx_.loop_end.synchronize("finishing the tiles");
  stats_.loop_ms = ctx_.loop_end.since(ctx_.loop_start);
  stats_.seed_ms = seeds_end.since(ctx_.loop_start);
  if (stats_.prior_sample > 0) stats_.prior_ms = prior_end_.since(prior_start_);
  for (size_t u = 0; u < upload_done_.size(); ++u) stats_.upload_times[u].done = upload_done_[u].since(ctx_.loop_start);
  unsigned long long total = 0;
  cuda_check(cudaMemcpy(&total, cand_total_.data(), sizeof total, cudaMemcpyDeviceToHost), "reading statistics");
  stats_.candidates = total;
}

void DeviceEngine::dot_products(const float* a, int m, const float* b, int n, float* c, int ldc, cudaStream_t s) {
  const int d = static_cast<int>(plan_.d);
  const float one = 1.f, zero = 0.f;
  cublas_check(cublasSetStream(ctx_.cublas, s), "binding cuBLAS to a stream");
  if (tensor_) {
    cublas_check(cublasGemmEx(ctx_.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, d, &one, a, CUDA_R_32F, d, b, CUDA_R_32F, d,
                              &zero, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (TF32) for the rescan");
  } else {
    cublas_check(cublasSgemm(ctx_.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, d, &one, a, d, b, d, &zero, c, ldc),
                 "cublasSgemm for the rescan");
  }
  cublas_check(cublasSetStream(ctx_.cublas, ctx_.gemm), "binding cuBLAS to its stream");
}

void DeviceEngine::release_loop_buffers() {
  cudaSetDevice(ctx_.device);
  cuda_check(cudaDeviceSynchronize(), "finishing the tiles");
  // Freeing synchronises the device and takes time: only when the final
  // step might not fit beside the loop's buffers.
  if (plan_.resident && plan_.bytes + plan_.final_bytes <= plan_.budget) return;
  for (auto& t : tiles_) t.release();
  pend_dist_.release();
  pend_index_.release();
  pend_fill_.release();
  for (int i = 0; i < kMaxSets; ++i) {
    cand_dist_[i].release();
    cand_index_[i].release();
  }
  if (!plan_.resident) {
    rows_.release();
    norms_.release();
  }
}

const float* DeviceEngine::all_rows() {
  if (!plan_.resident) return nullptr;
  cuda_check(cudaSetDevice(ctx_.device), "selecting the device");
  for (int64_t b = 0; b < plan_.blocks(); ++b) ensure_block(b);
  Event ready(false);
  ready.record(ctx_.copy);
  ctx_.select.wait(ready);
  return rows_.data();
}

}  // namespace manifold::gpu
