#pragma once
// The CPU backend's one way into OpenBLAS (internal to kernels/cpu): row-major
// C[M, N] = op(A)[M, K] @ op(B)[K, N] + beta * C through cblas_sgemm / cblas_dgemm, either as one
// call on the calling thread or cut into column blocks run on the ThreadPool.
//
// OpenBLAS runs single-threaded (CpuBackend sets openblas_set_num_threads(1)): all of the
// backend's parallelism is the ThreadPool's, so OpenBLAS's own threads never spin on cores the
// pool's element-wise ops need (they cost ~20 % on 2 cores). A parallel GEMM cuts C's columns
// into `parts` blocks (whole 16-column tiles but the last); each block is one single-threaded
// call, on whichever pool thread runs it. What a block computes depends only on the shapes and
// `parts`, never on the pool's size or timing, so results are bitwise reproducible for a fixed
// `parts` (the CpuBackend's blas_threads) and any pool.
#include <cblas.h>

#include <algorithm>
#include <cstdint>

#include "core/thread_pool.hpp"

namespace mlpo::cpu {

struct GemmOperands {
  bool trans_a = false, trans_b = false;
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;  // 0: packed (the row length of the operand as stored)
};

inline void blas_gemm(const GemmOperands& g, float alpha, const float* A, const float* B, float beta,
                      float* C) {
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(g.M), static_cast<blasint>(g.N), static_cast<blasint>(g.K), alpha, A,
              static_cast<blasint>(g.lda), B, static_cast<blasint>(g.ldb), beta, C,
              static_cast<blasint>(g.ldc));
}

inline void blas_gemm(const GemmOperands& g, double alpha, const double* A, const double* B, double beta,
                      double* C) {
  cblas_dgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(g.M), static_cast<blasint>(g.N), static_cast<blasint>(g.K), alpha, A,
              static_cast<blasint>(g.lda), B, static_cast<blasint>(g.ldb), beta, C,
              static_cast<blasint>(g.ldc));
}

// Fills in packed leading dimensions.
inline GemmOperands packed(GemmOperands g) {
  if (g.lda == 0) g.lda = g.trans_a ? g.M : g.K;
  if (g.ldb == 0) g.ldb = g.trans_b ? g.K : g.N;
  if (g.ldc == 0) g.ldc = g.N;
  return g;
}

// One single-threaded call on the calling thread (inside a pool task, say).
template <class T>
void gemm_serial(GemmOperands g, T alpha, const T* A, const T* B, T beta, T* C) {
  if (g.M == 0 || g.N == 0) return;
  blas_gemm(packed(g), alpha, A, B, beta, C);
}

// C's columns in `parts` blocks over the pool (see the header).
template <class T>
void gemm_parallel(ThreadPool& pool, unsigned parts, GemmOperands g, T alpha, const T* A, const T* B, T beta,
                   T* C) {
  g = packed(g);
  constexpr std::int64_t kTile = 16;
  const std::int64_t tiles = (g.N + kTile - 1) / kTile;
  const std::int64_t blocks = std::clamp<std::int64_t>(parts, 1, std::max<std::int64_t>(tiles, 1));
  if (blocks <= 1) return gemm_serial(g, alpha, A, B, beta, C);
  const std::int64_t per = (tiles + blocks - 1) / blocks * kTile;
  pool.parallel_for(static_cast<std::size_t>(blocks), 1, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      const std::int64_t n0 = static_cast<std::int64_t>(b) * per, n1 = std::min(g.N, n0 + per);
      if (n0 >= n1) continue;
      GemmOperands part = g;
      part.N = n1 - n0;
      blas_gemm(part, alpha, A, g.trans_b ? B + n0 * g.ldb : B + n0, beta, C + n0);
    }
  });
}

}  // namespace mlpo::cpu
