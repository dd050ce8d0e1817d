#pragma once
// The rigorous error bound behind exact k-NN graphs, shared by the CPU
// backend, the GPU's certification kernel and its host twin (so all keep the
// same candidates). CUDA-compatible (MANIFOLD_HD), otherwise plain C++.
// Derivation (also in docs/PRECISION.md):
//
// The tile loop ranks neighbours by a = fl(fl(ni + nj) - 2 D), computed as
// fmaf(-2, D, ni + nj), where ni = fl32(|x|^2 summed in float64), nj likewise
// and D is the GEMM's dot product. The true squared distance is
// s = |x|^2 + |y|^2 - 2 x.y. With u = 2^-24 (float32 rounding):
//   |fl(ni + nj) - (ni + nj)| <= u (ni + nj)
//   |a - (fl(ni + nj) - 2 D)| <= u |a| / (1 - u)               (the fma's rounding)
//   |ni - |x|^2| <= 2^-23 |x|^2                                 (float64 sum, float32 rounding)
//   |D - x.y| <= c_dot |x| |y| + 2 t 2^-126 (+ 2^-126 sqrt(d) (|x| + |y|), tensor cores)   (below)
// so |a - s| <= u|a|(1+2u) + u(ni+nj) + 2^-23(|x|^2+|y|^2) + 2 c_dot |x||y| + abs_term
//               + flush_linear (|x| + |y|).
//
// The dot product. Rounding the inputs to a format with unit roundoff u_in
// (TF32 keeps 10 fraction bits: u_in = 2^-11 rounding to nearest, 2^-10 when
// the hardware truncates; we take 2^-10) gives x~ = x(1+a_i), y~ = y(1+b_i),
// |x~_i y~_i - x_i y_i| <= (2 u_in + u_in^2) |x_i y_i|. The products of
// TF32 operands are exact in float32 (11 x 11 significant bits), and any
// summation order of d terms with per-step relative error u_acc is off by
// at most gamma_d = d u_acc / (1 - d u_acc) times sum |x~_i y~_i| (Higham,
// Accuracy and Stability, 3.1). With sum |x_i y_i| <= |x||y| (Cauchy-Schwarz):
//   c_dot = 2 u_in + u_in^2 + gamma_d (1 + u_in)^2.
// u_acc: float32 FFMA rounds to nearest (2^-24); tensor cores align the
// addends of a block to the largest exponent and truncate, and their
// accumulator truncates (Fasi, Higham, Mikaitis, Pranesh 2021), which the
// same recursion bounds with twice the truncation unit. We take 2^-23 for the
// float32 path (a factor 2 to spare) and 2^-22 for tensor cores. Products or
// partial sums below 2^-126 may be flushed to zero: at most 2^-126 each, the
// additive 2 t 2^-126 per dot product of t terms (abs_term, doubled in the
// distance). Tensor cores may also flush a subnormal operand v (|v| <
// 2^-126): at most 2^-126 |w| for its partner w, summed at most 2^-126
// (|x|_1 + |y|_1) <= 2^-126 sqrt(d) (|x| + |y|) (flush_linear, doubled in
// the distance and covering 1 + 2^-9 of the split's partners below).
// The bound uses 1+2^-22 times ni and nj for |x|^2 and |y|^2 and is inflated
// by 1e-4 relative, which covers the float64 rounding of evaluating it.
//
// Split TF32 (exact precision on tensor cores): each float32 operand is
// split into a head and a tail, x = xh + xl + xr, xh = x cut to TF32
// (rounded or truncated: |x - xh| <= 2^-10 |x|), xl = (x - xh) cut to
// TF32 (the subtraction exact), |xr| <= 2^-10 |xl| <= 2^-20 |x|; the dot
// product sums xh yh + xh yl + xl yh, each a product of TF32 operands (exact
// in float32). It drops xl yl + xh yr + xr yh + (smaller) <= (3 + 2^-9)
// 2^-20 |xy| < 2^-18 |xy| per term, and its 3 d terms sum to at most (1 +
// 2^-9) sum |x_i y_i|, with the tensor cores' u_acc:
//   c_dot = 2^-18 + gamma_3d (1 + 2^-9).
// At d = 256 that is 6 times float32's c_dot (a 6 times wider window) and a
// tenth of TF32's.
//
// The exact distance used for the final ranking is s64, the float64 sum of
// squared float64 differences (warp_sum_sq_diff): |s64 - s| <= (d+2) 2^-53 s
// (1.01), taken as delta = (d + 16) 2^-52 to cover the rounding of a -+ e too.
// So for every pair: lower64 <= s64 <= upper64.
//
// Rows moved with rounding (translation.h, the rounded kind): the loop's
// rows are x~ = fl32(x - o), each value within u/(1-u) of itself from
// x - o, so |(x~ - y~) - (x - y)| <= eta = u/(1-u) (|x~| + |y~|) with
// |x~| <= sqrt(nx) (below). The bound above then holds for s' = |x~ - y~|^2,
// and |s' - s| = |sqrt(s') - sqrt(s)| (sqrt(s') + sqrt(s)) <= eta (2
// sqrt(|a| + e) + eta): entry_error adds that (ErrorModel::moved_rounding
// = u/(1-u); zero, and the bound unchanged, for exact moves). lower64 stays
// non-decreasing in a, which the certificate's "a >= a_min" needs: where
// a - e is positive, sqrt(|a| + e) > eta and the added term grows slower
// than a; elsewhere lower64 is 0.
#include <math.h>

#include <cmath>
#include <cstdint>

#ifndef MANIFOLD_HD
#ifdef __CUDACC__
#define MANIFOLD_HD __host__ __device__ __forceinline__
#else
#define MANIFOLD_HD inline
#endif
#endif

namespace manifold::exact {

struct ErrorModel {
  double c_dot = 0;           ///< |D - x.y| <= c_dot |x||y| + abs_term/2 + flush_linear/2 (|x| + |y|)
  double abs_term = 0;        ///< 2 * 2 t 2^-126: flushed tiny products, in the distance
  double flush_linear = 0;    ///< 2 * 2^-126 sqrt(d) (1 + 2^-9): tensor cores' flushed subnormal operands
  double delta = 0;           ///< relative error of s64 (float64 evaluation), with margin
  double moved_rounding = 0;  ///< the loop's rows rounded when moved (u/(1-u)), or 0
};

/// How the tile loop computes its dot products (the bound's kind).
enum class DotArithmetic {
  Float32,    ///< float32 FFMA (cuBLAS SGEMM, the fused FFMA kernel, the CPU)
  Tf32,       ///< tensor cores, operands rounded (or cut) to TF32: fast-exact
  SplitTf32,  ///< tensor cores, each float32 operand split into two TF32 parts, three products
};

/// Longest dot product one GEMM computes (d u_acc stays below 1/4). Longer
/// rows (4096 x 4096 detector images) are multiplied in chunks of
/// dot_product_chunk(d) columns added up in the float32 tile (the CPU's
/// distance_tile); the GPU refuses them.
constexpr int64_t kMaxBoundDim = int64_t{1} << 20;

/// Columns per GEMM for dimension d: all of them up to kMaxBoundDim, else
/// about sqrt(d), which minimises the summands below.
inline int64_t dot_product_chunk(int64_t d) {
  if (d <= kMaxBoundDim) return d;
  return static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(d))));
}

/// The summands whose rounding the bound covers for dimension d: d, or for
/// chunked products each chunk's columns plus one addition per chunk
/// (gamma_a + gamma_b + gamma_a gamma_b <= gamma_(a+b)).
inline int64_t dot_product_terms(int64_t d) {
  const int64_t c = dot_product_chunk(d);
  return c == d ? d : c + (d + c - 1) / c;
}

/// The model for dimension d and the loop's dot products (`SplitTf32` and
/// `Tf32` need d <= kMaxBoundDim; float32 takes any d, through
/// dot_product_terms); `moved_rows_rounded`: the loop multiplies rows moved
/// by a rounded translation, the exact keys come from the rows as they were.
inline ErrorModel make_error_model(int64_t d, DotArithmetic dots, bool moved_rows_rounded = false) {
  const double dd = static_cast<double>(d);
  const double tiny = std::ldexp(1.0, -126);
  ErrorModel m;
  if (dots == DotArithmetic::Float32) {
    const double terms = static_cast<double>(dot_product_terms(d));
    const double u_acc = std::ldexp(1.0, -23);
    m.c_dot = terms * u_acc / (1.0 - terms * u_acc);
    m.abs_term = 4 * dd * tiny;
  } else {
    const double u_acc = std::ldexp(1.0, -22);
    if (dots == DotArithmetic::Tf32) {
      const double u_in = std::ldexp(1.0, -10);
      const double gamma = dd * u_acc / (1.0 - dd * u_acc);
      m.c_dot = 2 * u_in + u_in * u_in + gamma * (1 + u_in) * (1 + u_in);
      m.abs_term = 4 * dd * tiny;
    } else {
      const double terms = 3 * dd;
      const double gamma = terms * u_acc / (1.0 - terms * u_acc);
      m.c_dot = std::ldexp(1.0, -18) + gamma * (1 + std::ldexp(1.0, -9));
      m.abs_term = 4 * terms * tiny;
    }
    m.flush_linear = 2 * tiny * std::sqrt(dd) * (1 + std::ldexp(1.0, -9));
  }
  m.delta = (dd + 16) * std::ldexp(1.0, -52);
  if (moved_rows_rounded) m.moved_rounding = std::ldexp(1.0, -24) / (1 - std::ldexp(1.0, -24));
  return m;
}

/// Bound on |a - s| for a ranking distance a between rows with stored norms ni, nj.
MANIFOLD_HD double entry_error(double a, double ni, double nj, const ErrorModel& m) {
  const double u = 5.9604644775390625e-08;          // 2^-24
  const double u2 = 1.1920928955078125e-07;         // 2^-23
  const double grow = 1.0 + 2.384185791015625e-07;  // 1 + 2^-22
  const double nx = ni * grow, ny = nj * grow;
  double e = u * std::fabs(a) * (1 + 2 * u) + u * (ni + nj) + u2 * (nx + ny) + 2 * m.c_dot * std::sqrt(nx * ny) +
             m.abs_term;
  if (m.flush_linear > 0) e += m.flush_linear * (std::sqrt(nx) + std::sqrt(ny));
  if (m.moved_rounding > 0) {
    const double eta = m.moved_rounding * (std::sqrt(nx) + std::sqrt(ny));
    e += eta * (2 * std::sqrt(std::fabs(a) + e) + eta);
  }
  return e * 1.0001;
}

/// Lower and upper bounds on s64 (s64 >= 0 always: a sum of squares).
MANIFOLD_HD double lower64(double a, double e, const ErrorModel& m) {
  if (a > 1e300) return a;  // +inf (NaN data seeded as +inf): no bound below it either
  const double l = a - e;
  return l > 0 ? l * (1 - m.delta) : 0.0;
}
MANIFOLD_HD double upper64(double a, double e, const ErrorModel& m) { return (a + e) * (1 + m.delta); }

/// The largest stored squared norm that a point missing from a row's list
/// can have and still rank with the row's k-th upper bound `uk` (float64,
/// squared distance): beyond it the point is too far by the triangle
/// inequality, so the certificate bounds the missing points with this norm,
/// not with `ymax`, the largest of all (one far row, such as a blank frame
/// among patterns moved about their mean, would otherwise widen every row's
/// bound). Rule: the stored norms are within 1 + 2^-22 of the true ones
/// (grow), |x~ - y~| >= |y~| - |x~| and sqrt(s) >= sqrt(s~) - eta
/// (moved_rounding r), so sqrt(s) >= |y~| (1 - r) - |x~| (1 + r); a norm
/// above the cap makes s64 > 1.01 uk + 1e-30, whose key is strictly above
/// uk's (the margin outlasts the float rounding and sqrtf).
MANIFOLD_HD double missing_norm_cap(double ni, double uk, double ymax, const ErrorModel& m) {
  if (!(uk < 1e300)) return ymax;
  const double grow = 1.0 + 2.384185791015625e-07;  // 1 + 2^-22
  const double r = m.moved_rounding;
  const double reach = std::sqrt((1.01 * uk + 1e-30) / (1 - m.delta));
  const double norm = (std::sqrt(ni * grow) * (1 + r) + reach) / (1 - r);
  const double cap = norm * norm * grow * (1 + 1e-9);
  return cap < ymax ? cap : ymax;
}

/// The metric's true distance from a float64 squared distance: the key the
/// result is ranked by (float first, then sqrt or halving, as core's
/// to_true_distance). Monotone non-decreasing in d2.
/// NaN (non-finite data) ranks as +inf, after every real distance.
MANIFOLD_HD float key_of(double d2, bool euclidean) {
  float f = static_cast<float>(d2);
  if (f != f) return INFINITY;
  if (f < 0.f) f = 0.f;
  return euclidean ? sqrtf(f) : 0.5f * f;
}

}  // namespace manifold::exact
