// The GPU back end of the Chebyshev subspace eigensolver (core's
// block_eigensolver.h): A in CSR on the device with its diagonal inside (so
// the filter's shift A - cI is a kernel on n values), four row-major n x b
// blocks, an SpMM for C = alpha (A - cI) B + beta C (our warp-per-row kernel,
// impl/eigen_kernels.cu; cuSPARSE's CSR_ALG2 for blocks it does not take),
// cuBLAS DGEMM for
// the block inner products and the b x b rotations. The algorithm itself
// runs on the host in core; only b x b matrices and b norms cross the bus
// per outer iteration.
#include "manifold/gpu/gpu_eigensolver.h"

#include <cusparse.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "device_context.h"
#include "impl/eigen_kernels.h"
#include "manifold/block_eigensolver.h"
#include "manifold/error.h"
#include "manifold/result_vector.h"
#include "manifold/gpu/gpu_knn_backend.h"
#include "settings.h"
#include "utils/cuda_check.h"
#include "utils/resources.h"

namespace manifold::gpu {

namespace {

void cusparse_check(cusparseStatus_t status, const char* what) {
  if (status == CUSPARSE_STATUS_SUCCESS) return;
  const std::string msg = std::string("GPU eigensolver: ") + what + " failed: " + cusparseGetErrorString(status);
  if (status == CUSPARSE_STATUS_ALLOC_FAILED) throw DeviceOutOfMemory(msg);
  throw Error(msg);
}

/// Our warp-per-row kernel takes blocks of up to 128 columns and was the
/// fastest measured (bench/diffusion/RESULTS.md); wider blocks, and every
/// block where Settings::spmm_cusparse (tests) asks, go to cuSPARSE's
/// CSR_ALG2, its deterministic algorithm for row-major blocks.
bool use_cusparse(int block) { return settings().spmm_cusparse || !csr_spmm_supports(block); }

/// The matrix in CSR with its diagonal in place (columns ascending), int32
/// indices, and where each row's diagonal entry went.
struct CsrWithDiagonal {
  std::vector<int> ptr, pos;
  ResultVector<int> col;
  ResultVector<double> val;
};

/// Filled in parallel (visit_with_diagonal) into arrays sized without a
/// zero fill.
CsrWithDiagonal csr_with_diagonal(const DiffusionMatrix& a) {
  const int64_t n = a.n, nnz = a.nnz();
  CsrWithDiagonal m;
  m.ptr.resize(static_cast<size_t>(n + 1));
  for (int64_t i = 0; i <= n; ++i)
    m.ptr[static_cast<size_t>(i)] = static_cast<int>(a.row_ptr[static_cast<size_t>(i)] + i);
  m.pos.resize(static_cast<size_t>(n));
  m.col.resize(static_cast<size_t>(nnz));
  m.val.resize(static_cast<size_t>(nnz));
  visit_with_diagonal(a, 0, [&](int64_t i, int64_t pos, int32_t j, double v) {
    m.col[static_cast<size_t>(pos)] = j;
    m.val[static_cast<size_t>(pos)] = v;
    if (j == i) m.pos[static_cast<size_t>(i)] = static_cast<int>(pos);
  });
  return m;
}

class GpuBlockOperator final : public BlockOperator {
 public:
  GpuBlockOperator(const DiffusionMatrix& a, int block) : n_(a.n), b_(block) {
    try {
      build(a);
    } catch (...) {
      release();  // the destructor does not run for a half-built object
      throw;
    }
  }
  ~GpuBlockOperator() override { release(); }
  GpuBlockOperator(const GpuBlockOperator&) = delete;
  GpuBlockOperator& operator=(const GpuBlockOperator&) = delete;

 private:
  void build(const DiffusionMatrix& a) {
    const int64_t nnz = a.nnz();
    if (nnz >= (int64_t{1} << 31))
      throw DeviceOutOfMemory("GPU eigensolver: " + std::to_string(nnz) + " nonzeros exceed 32-bit CSR indices");
    const size_t need = static_cast<size_t>(nnz) * (sizeof(double) + sizeof(int)) +
                        static_cast<size_t>(n_ + 1) * sizeof(int) +
                        static_cast<size_t>(n_) * (sizeof(int) + sizeof(double)) +
                        4 * static_cast<size_t>(n_) * b_ * sizeof(double);
    const size_t free_bytes = device_free_bytes();  // with what the device cache holds
    if (need + (size_t{256} << 20) > free_bytes)
      throw DeviceOutOfMemory("GPU eigensolver: needs " + format_bytes(static_cast<double>(need)) + ", " +
                              format_bytes(static_cast<double>(free_bytes)) + " free on the device");
    const CsrWithDiagonal m = csr_with_diagonal(a);
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
    cublas_check(cublasCreate(&cublas_), "creating the cuBLAS handle");
    cublas_check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    cusparse_check(cusparseCreate(&cusparse_), "creating the cuSPARSE handle");
    cusparse_check(cusparseSetStream(cusparse_, stream_), "cusparseSetStream");
    ptr_.reset(m.ptr.size(), "allocating the eigensolver's matrix");
    col_.reset(m.col.size(), "allocating the eigensolver's matrix");
    val_.reset(m.val.size(), "allocating the eigensolver's matrix");
    pos_.reset(m.pos.size(), "allocating the eigensolver's matrix");
    diag_.reset(static_cast<size_t>(n_), "allocating the eigensolver's matrix");
    copy_in(ptr_.data(), m.ptr.data(), m.ptr.size());
    copy_in(col_.data(), m.col.data(), m.col.size());
    copy_in(val_.data(), m.val.data(), m.val.size());
    copy_in(pos_.data(), m.pos.data(), m.pos.size());
    copy_in(diag_.data(), a.diag.data(), a.diag.size());
    for (auto& s : slot_) {
      // Zeroed: a product with beta = 0 must not meet NaN bit patterns.
      s.reset(static_cast<size_t>(n_) * b_, "allocating the eigensolver's blocks");
      cuda_check(cudaMemsetAsync(s.data(), 0, s.bytes(), stream_), "clearing a block");
    }
    small_.reset(static_cast<size_t>(b_) * b_ + b_, "allocating the eigensolver's blocks");
    partial_.reset(static_cast<size_t>(residual_partial_blocks()) * b_, "allocating the eigensolver's blocks");
    cusparse_check(cusparseCreateCsr(&mat_, n_, n_, nnz, ptr_.data(), col_.data(), val_.data(), CUSPARSE_INDEX_32I,
                                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
                   "describing the matrix");
    for (int s = 0; s < 4; ++s)
      cusparse_check(cusparseCreateDnMat(&dense_[s], n_, b_, b_, slot_[s].data(), CUDA_R_64F, CUSPARSE_ORDER_ROW),
                     "describing a block");
    use_cusparse_ = use_cusparse(b_);
    const double one = 1, zero = 0;
    size_t bytes = 0;
    cusparse_check(cusparseSpMM_bufferSize(cusparse_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                           CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_, dense_[0], &zero, dense_[1],
                                           CUDA_R_64F, kAlg, &bytes),
                   "sizing the SpMM workspace");
    spmm_buffer_.reset(std::max<size_t>(bytes, 1), "allocating the SpMM workspace");
    cusparse_check(cusparseSpMM_preprocess(cusparse_, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                           CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat_, dense_[0], &zero, dense_[1],
                                           CUDA_R_64F, kAlg, spmm_buffer_.data()),
                   "preparing the SpMM");
    sync();
  }
  void release() noexcept {
    if (stream_) cudaStreamSynchronize(stream_);
    for (auto& d : dense_)
      if (d) cusparseDestroyDnMat(d), d = nullptr;
    if (mat_) cusparseDestroySpMat(mat_), mat_ = nullptr;
    if (cusparse_) cusparseDestroy(cusparse_), cusparse_ = nullptr;
    if (cublas_) cublasDestroy(cublas_), cublas_ = nullptr;
    if (stream_) cudaStreamDestroy(stream_), stream_ = nullptr;
  }

 public:
  int64_t rows() const override { return n_; }
  int block() const override { return b_; }

  void upload(int slot, const double* host) override {
    copy_in(slot_[slot].data(), host, static_cast<size_t>(n_) * b_);
  }
  void download(int slot, int cols, double* host) override {
    cuda_check(cudaMemcpy2DAsync(host, cols * sizeof(double), slot_[slot].data(), b_ * sizeof(double),
                                 cols * sizeof(double), static_cast<size_t>(n_), cudaMemcpyDeviceToHost, stream_),
               "downloading eigenvectors");
    sync();
  }
  void set_shift(double shift) override {
    if (shift == shift_) return;
    launch_shift_diagonal(val_.data(), pos_.data(), diag_.data(), shift, n_, stream_);
    shift_ = shift;
  }
  void apply(int in, int out, double alpha, double beta) override {
    ++products_;
    if (!use_cusparse_) {
      launch_csr_spmm(ptr_.data(), col_.data(), val_.data(), slot_[in].data(), slot_[out].data(), n_, b_, alpha, beta,
                      stream_);
      return;
    }
    cusparse_check(cusparseSpMM(cusparse_, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                mat_, dense_[in], &beta, dense_[out], CUDA_R_64F, kAlg, spmm_buffer_.data()),
                   "SpMM");
  }
  std::vector<double> inner(int a, int b) override {
    // Row-major n x b blocks are column-major b x n: G = A_c B_c^T.
    const double one = 1, zero = 0;
    cublas_check(cublasDgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, b_, b_, static_cast<int>(n_), &one, slot_[a].data(), b_,
                             slot_[b].data(), b_, &zero, small_.data(), b_),
                 "block inner product (DGEMM)");
    std::vector<double> g(static_cast<size_t>(b_) * b_);
    copy_out(g.data(), small_.data(), g.size());
    return g;
  }
  void multiply(int in, const std::vector<double>& m, int out) override {
    // out = in M  <=>  out_c = M^T in_c.
    copy_in(small_.data(), m.data(), m.size());
    const double one = 1, zero = 0;
    cublas_check(cublasDgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, b_, static_cast<int>(n_), b_, &one, small_.data(), b_,
                             slot_[in].data(), b_, &zero, slot_[out].data(), b_),
                 "block rotation (DGEMM)");
  }
  std::vector<double> residual_norms2(int aw, int x, const std::vector<double>& theta) override {
    double* theta_dev = small_.data() + static_cast<size_t>(b_) * b_;
    copy_in(theta_dev, theta.data(), theta.size());
    launch_residual_partials(slot_[aw].data(), slot_[x].data(), theta_dev, n_, b_, partial_.data(), stream_);
    std::vector<double> partial(partial_.size());
    copy_out(partial.data(), partial_.data(), partial.size());
    std::vector<double> r(static_cast<size_t>(b_), 0.0);
    for (int blk = 0; blk < residual_partial_blocks(); ++blk)
      for (int c = 0; c < b_; ++c) r[static_cast<size_t>(c)] += partial[static_cast<size_t>(blk) * b_ + c];
    return r;
  }

  void sync() { cuda_check(cudaStreamSynchronize(stream_), "GPU eigensolver"); }
  int64_t products() const { return products_; }
  std::string spmm_name() const { return use_cusparse_ ? "cuSPARSE SpMM CSR_ALG2" : "manifold warp-per-row CSR SpMM"; }

 private:
  template <class T>
  void copy_in(T* dev, const T* host, size_t count) {
    // Pageable host memory: the copy has finished reading `host` on return.
    cuda_check(cudaMemcpyAsync(dev, host, count * sizeof(T), cudaMemcpyHostToDevice, stream_), "upload");
    sync();
  }
  template <class T>
  void copy_out(T* host, const T* dev, size_t count) {
    cuda_check(cudaMemcpyAsync(host, dev, count * sizeof(T), cudaMemcpyDeviceToHost, stream_), "download");
    sync();
  }

  int64_t n_;
  int b_;
  double shift_ = 0;
  int64_t products_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
  cusparseSpMatDescr_t mat_ = nullptr;
  cusparseDnMatDescr_t dense_[4] = {nullptr, nullptr, nullptr, nullptr};
  static constexpr cusparseSpMMAlg_t kAlg = CUSPARSE_SPMM_CSR_ALG2;
  bool use_cusparse_ = false;
  DeviceBuffer<int> ptr_, col_, pos_;
  DeviceBuffer<double> val_, diag_, small_, partial_;
  DeviceBuffer<double> slot_[4];
  DeviceBuffer<char> spmm_buffer_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Eigenpairs gpu_top_eigenpairs(const DiffusionMatrix& a, int count, const EigenOptions& options, Progress& progress,
                              int device) {
  if (count < 1 || count >= a.n)
    throw UsageError("eigensolve: " + std::to_string(count) + " eigenpairs requested from a " + std::to_string(a.n) +
                     "-point graph; need fewer than the points");
  if (!options.start_block.empty() &&
      options.start_block.size() != static_cast<size_t>(a.n) * static_cast<size_t>(options.start_cols))
    throw Error("eigensolve: the start block has " + std::to_string(options.start_block.size()) + " values for " +
                std::to_string(a.n) + " x " + std::to_string(options.start_cols));
  DeviceScope scope(device);
  const auto t0 = std::chrono::steady_clock::now();
  GpuBlockOperator op(a, chebyshev_block(count, a.n, options.ncv));
  const double setup_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  ChebyshevOptions co;
  co.tolerance = options.tolerance;
  co.lower = spectrum_lower_bound(a);
  // The budget counts products with A; a block product counts once.
  if (options.max_matvecs > 0) co.max_products = options.max_matvecs;
  co.time_limit_s = options.time_limit_s;
  if (!options.start_block.empty()) {
    co.start = options.start_block.data();
    co.start_cols = options.start_cols;
  }
  co.trace = settings().chebyshev_trace;
  ChebyshevStats st;
  Eigenpairs e = chebyshev_eigenpairs(op, count, co, progress, &st);
  op.sync();
  e.details = {{"gpu", device_name(device)},
               {"spmm", op.spmm_name()},
               {"outer_iterations", st.outer_iterations},
               {"block_products", st.products},
               {"filter_degrees", st.degrees},
               {"orthonormalisation_retries", st.orthonormalisation_retries},
               {"upload_s", setup_s},
               {"solve_s", seconds_since(t1)},
               {"started_from_columns", co.start_cols}};
  return e;
}

void register_gpu_eigensolver() {
  DeviceEigensolver d;
  d.name = "gpu";
  d.method = "Chebyshev-filtered subspace iteration on the GPU (CSR SpMM + cuBLAS, float64)";
  d.available = [] { return device_count() > 0; };
  // In use: a k-NN build made a context, or an earlier solve ran.
  static std::atomic<bool> solved{false};
  d.warm = [] { return DeviceContext::any() || solved.load(std::memory_order_relaxed); };
  d.start = [] {
    DeviceScope scope(0);
    cuda_check(cudaFree(nullptr), "starting the device");
  };
  d.solve = [](const DiffusionMatrix& a, int count, const EigenOptions& o, Progress& progress) {
    Eigenpairs e = gpu_top_eigenpairs(a, count, o, progress);
    solved.store(true, std::memory_order_relaxed);
    return e;
  };
  register_device_eigensolver(std::move(d));
}

}  // namespace manifold::gpu
