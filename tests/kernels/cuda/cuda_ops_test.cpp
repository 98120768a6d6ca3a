// Every CUDA op against its CPU twin: the same inputs through OpRunner (CpuBackend) and
// GpuRunner (CudaBackend), each run written once as a template over the runner. Shapes are the
// CPU op tests' plus ones that cross the CUDA kernels' tile and block boundaries (attention
// tiles of 32 rows/keys, head dims that are not multiples of 32, rows longer than a block).
#include <cmath>

#include "tests/kernels/cuda/cuda_test_util.hpp"

namespace mlpo::testing {
namespace {

using Ops = CudaTest;

void expect_close(const Vec& gpu, const Vec& cpu, double tol, const char* what) {
  EXPECT_LT(normalized_error(gpu, cpu), tol) << what;
}

// ---- cast, fill, add -----------------------------------------------------------------

template <class Runner>
Vec run_cast(Runner& r, DType to, DType from, const Vec& x) {
  const auto n = static_cast<std::int64_t>(x.size());
  Tensor src = r.upload(x, from, {n}), dst = r.empty(to, {n});
  r.backend().cast(dst, src);
  return r.download(dst);
}

TEST_F(Ops, CastRoundsExactlyLikeTheCpu) {
  Vec x = random_vec(1000, 1, 3.0);
  // bf16 ties (exactly halfway between two bf16 values) must round to even, as on the CPU.
  for (int i = 0; i < 64; ++i) x.push_back(1.0 + (2 * i + 1) * std::ldexp(1.0, -8));
  OpRunner cpu;
  GpuRunner gpu;
  for (DType to : kGpuStorageTypes)
    for (DType from : kGpuStorageTypes) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      EXPECT_EQ(run_cast(gpu, to, from, x), run_cast(cpu, to, from, x));
    }
}

TEST_F(Ops, FillWritesEveryElementAndAddMatchesCpu) {
  GpuRunner gpu;
  OpRunner cpu;
  Tensor ids = gpu.empty(DType::i32, {5});
  gpu.backend().fill(ids, 7);
  std::vector<std::int32_t> host(5);
  gpu.backend().copy_to_host(host.data(), ids);
  EXPECT_EQ(host, std::vector<std::int32_t>(5, 7));
  for (DType t : kGpuStorageTypes) {
    SCOPED_TRACE(dtype_name(t));
    Tensor z = gpu.empty(t, {1234});
    gpu.backend().fill(z, 0.25);
    EXPECT_EQ(gpu.download(z), Vec(1234, 0.25));
    const Vec a = rounded(random_vec(3001, 2), t), b = rounded(random_vec(3001, 3), t);
    auto run = [&](auto& r) {
      Tensor ta = r.upload(a, t, {3001}), tb = r.upload(b, t, {3001});
      r.backend().add(ta, ta, tb);  // out aliases a, as the model's residual adds may
      return r.download(ta);
    };
    EXPECT_EQ(run(gpu), run(cpu));  // one fp32 add and one rounding: identical
  }
}

// ---- embedding -----------------------------------------------------------------------

TEST_F(Ops, EmbeddingMatchesCpuBitwiseWithRepeatedTokens) {
  constexpr int V = 11, C = 300, N = 50;         // C > one block's 256 threads
  const Tokens tokens = random_tokens(N, V, 4);  // 50 draws from 11: many repeats
  for (DType t : kGpuStorageTypes) {
    SCOPED_TRACE(dtype_name(t));
    const Vec table = rounded(random_vec(V * C, 5), t), dout = rounded(random_vec(N * C, 6), t);
    const Vec start = random_vec(V * C, 7);  // gradients accumulate into what is there
    auto run = [&](auto& r) {
      Tensor tt = r.upload(table, t, {V, C}), out = r.empty(t, {N, C}), tok = r.upload_tokens(tokens);
      r.backend().embedding_forward(out, tok, tt);
      Tensor dtable = r.upload(start, DType::f32, {V, C});
      r.backend().embedding_backward(dtable, tok, r.upload(dout, t, {N, C}));
      return std::pair{r.download(out), r.download(dtable)};
    };
    OpRunner cpu;
    GpuRunner gpu;
    const auto want = run(cpu), got = run(gpu);
    EXPECT_EQ(got.first, want.first);
    EXPECT_EQ(got.second, want.second);  // same additions in the same order
  }
}

TEST_F(Ops, EmbeddingRejectsTokenOutsideVocabulary) {
  GpuRunner gpu;
  Tensor table = gpu.upload(random_vec(4 * 8, 8), DType::bf16, {4, 8}), out = gpu.empty(DType::bf16, {3, 8});
  Tensor tokens = gpu.upload_tokens({1, 4, 2});
  try {
    gpu.backend().embedding_forward(out, tokens, table);
    FAIL() << "token 4 of a 4-token vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token 4 at position 1"), std::string::npos) << e.what();
  }
}

// ---- RMSNorm -------------------------------------------------------------------------

struct NormRun {
  Vec out, rstd, dx, dw;
};

template <class Runner>
NormRun run_rmsnorm(Runner& r, DType t, int N, int C, const Vec& x, const Vec& w, const Vec& dout,
                    const Vec& dw0) {
  Tensor tx = r.upload(x, t, {N, C}), tw = r.upload(w, t, {C}), out = r.empty(t, {N, C});
  Tensor rstd = r.empty(acc_type(t), {N});
  r.backend().rmsnorm_forward(out, rstd, tx, tw, 1e-5f);
  Tensor dx = r.empty(t, {N, C}), dw = r.upload(dw0, acc_type(t), {C});
  r.backend().rmsnorm_backward(dx, dw, r.upload(dout, t, {N, C}), tx, tw, rstd);
  return {r.download(out), r.download(rstd), r.download(dx), r.download(dw)};
}

TEST_F(Ops, RmsNormMatchesCpu) {
  // 5 x 32 is the CPU test's shape; 300 x 1000 spans several chunks of the dweight reduction
  // and rows longer than a block.
  for (auto [N, C] : {std::pair{5, 32}, std::pair{300, 1000}}) {
    for (DType t : kGpuStorageTypes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " N=" + std::to_string(N) + " C=" + std::to_string(C));
      const Vec x = rounded(random_vec(N * C, 11), t), w = rounded(random_vec(C, 12), t);
      const Vec dout = rounded(random_vec(N * C, 13), t), dw0 = random_vec(C, 14);
      OpRunner cpu;
      GpuRunner gpu;
      const NormRun want = run_rmsnorm(cpu, t, N, C, x, w, dout, dw0),
                    got = run_rmsnorm(gpu, t, N, C, x, w, dout, dw0);
      expect_close(got.out, want.out, tolerance(t), "out");
      expect_close(got.rstd, want.rstd, tolerance(DType::f32), "rstd");
      expect_close(got.dx, want.dx, tolerance(t), "dx");
      expect_close(got.dw, want.dw, tolerance(DType::f32), "dweight (fp32, accumulated)");
    }
  }
}

// ---- linear --------------------------------------------------------------------------

struct LinearRun {
  Vec out, dx, dx_acc, dw;
};

// offset > 0 places every operand that many elements into its buffer, so cuBLASLt sees
// pointers that are not 256-byte aligned, as parameter slices of the flat weight buffer are.
template <class Runner>
LinearRun run_linear(Runner& r, DType t, int N, int I, int O, const Vec& x, const Vec& w, const Vec& dout,
                     const Vec& dw0, int offset) {
  auto place = [&](const Vec& v, DType type, std::int64_t rows, std::int64_t cols) {
    Vec padded(static_cast<std::size_t>(offset), 0.0);
    padded.insert(padded.end(), v.begin(), v.end());
    Tensor buf = r.upload(padded, type, {static_cast<std::int64_t>(padded.size())});
    return buf.slice(offset, {rows, cols});
  };
  Tensor tx = place(x, t, N, I), tw = place(w, t, O, I), out = r.empty(t, {N, O});
  r.backend().linear_forward(out, tx, tw);
  Tensor td = place(dout, t, N, O), dx = r.empty(t, {N, I}), dw = place(dw0, acc_type(t), O, I);
  r.backend().linear_backward(dx, dw, td, tx, tw, false);
  LinearRun run{r.download(out), r.download(dx), {}, {}};
  r.backend().linear_backward(dx, dw, td, tx, tw, true);  // dx += again, dw += again
  run.dx_acc = r.download(dx);
  run.dw = r.download(dw);
  return run;
}

TEST_F(Ops, LinearMatchesCpuForAlignedAndUnalignedOperands) {
  struct Case {
    int N, I, O, offset;
  };
  for (const Case c :
       {Case{7, 24, 10, 0}, Case{64, 96, 80, 0}, Case{33, 130, 72, 3}, Case{256, 512, 384, 1}}) {
    for (DType t : kGpuStorageTypes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " N=" + std::to_string(c.N) + " I=" + std::to_string(c.I) +
                   " O=" + std::to_string(c.O) + " offset=" + std::to_string(c.offset));
      const Vec x = rounded(random_vec(c.N * c.I, 21), t), w = rounded(random_vec(c.O * c.I, 22), t);
      const Vec dout = rounded(random_vec(c.N * c.O, 23), t), dw0 = random_vec(c.O * c.I, 24);
      OpRunner cpu;
      GpuRunner gpu;
      const LinearRun want = run_linear(cpu, t, c.N, c.I, c.O, x, w, dout, dw0, c.offset);
      const LinearRun got = run_linear(gpu, t, c.N, c.I, c.O, x, w, dout, dw0, c.offset);
      // f32 sums over up to 512 terms here: the bound scales with sqrt(K) of the CPU tests'.
      const double tol = t == DType::f32 ? 1e-4 : tolerance(t);
      expect_close(got.out, want.out, tol, "out");
      expect_close(got.dx, want.dx, tol, "dx");
      expect_close(got.dx_acc, want.dx_acc, tol, "dx accumulated");
      expect_close(got.dw, want.dw, 1e-4, "dw (fp32, accumulated twice)");
    }
  }
}

// ---- RoPE ----------------------------------------------------------------------------

TEST_F(Ops, RopeMatchesCpuInPlace) {
  constexpr int B = 2, T = 300, H = 3, D = 64;  // T large enough for angles far from 0
  for (DType t : kGpuStorageTypes) {
    SCOPED_TRACE(dtype_name(t));
    const Vec x = rounded(random_vec(B * T * H * D, 31), t), dout = rounded(random_vec(B * T * H * D, 32), t);
    auto run = [&](auto& r) {
      Tensor tx = r.upload(x, t, {B, T, H, D}), td = r.upload(dout, t, {B, T, H, D});
      r.backend().rope_forward(tx, tx, 10000.0f);
      r.backend().rope_backward(td, td, 10000.0f);
      return std::pair{r.download(tx), r.download(td)};
    };
    OpRunner cpu;
    GpuRunner gpu;
    const auto want = run(cpu), got = run(gpu);
    expect_close(got.first, want.first, tolerance(t), "forward");
    expect_close(got.second, want.second, tolerance(t), "backward");
  }
}

// ---- attention -----------------------------------------------------------------------

void expect_attention_matches_cpu(const reference::AttentionShape& s, CudaBackendOptions options) {
  const int nq = s.B * s.T * s.Hq * s.D, nkv = s.B * s.T * s.Hkv * s.D;
  for (DType t : kGpuStorageTypes) {
    SCOPED_TRACE(std::string(attention_path_name(options.attention)) + " " + dtype_name(t) +
                 " B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " Hq=" + std::to_string(s.Hq) +
                 " Hkv=" + std::to_string(s.Hkv) + " D=" + std::to_string(s.D));
    const Vec q = rounded(random_vec(nq, 41), t), k = rounded(random_vec(nkv, 42), t);
    const Vec v = rounded(random_vec(nkv, 43), t), dout = rounded(random_vec(nq, 44), t);
    OpRunner cpu;
    GpuRunner gpu(options);
    const AttentionRun want = run_attention(cpu, t, q, k, v, dout, s),
                       got = run_attention(gpu, t, q, k, v, dout, s);
    expect_close(got.out, want.out, tolerance(t), "out");
    expect_close(got.lse, want.lse, tolerance(DType::f32), "lse");
    expect_close(got.dq, want.dq, tolerance(t), "dq");
    expect_close(got.dk, want.dk, tolerance(t), "dk");
    expect_close(got.dv, want.dv, tolerance(t), "dv");
  }
}

TEST_F(Ops, AttentionMatchesCpuAcrossTilesHeadDimsAndGroups) {
  const reference::AttentionShape shapes[] = {
      {2, 7, 4, 2, 8},     // the CPU test's shape: one partial tile
      {1, 77, 4, 2, 64},   // three tiles, the last partial; GQA groups of 2
      {2, 40, 4, 1, 128},  // all query heads on one kv head; widest head of the fused kernels
      {1, 33, 3, 3, 100},  // head dim not a multiple of 32; plain multi-head
  };
  for (AttentionPath path : kAttentionPaths)
    for (const auto& s : shapes) expect_attention_matches_cpu(s, {path});
}

TEST_F(Ops, GemmAttentionMatchesCpuAcrossBlocksAndPairChunks) {
  // A small bound on the score elements of one call makes these shapes cross the GEMM path's
  // causal blocks and split the (batch, kv head) pairs into several calls: at 4096, blocks of
  // 13 and 18 rows (the last partial), one pair a call; at 65536, whole sequences, pairs in
  // chunks of 3 (+1) and 4 (+2).
  const reference::AttentionShape shapes[] = {
      {2, 100, 4, 2, 64},  // 4 pairs, groups of 2
      {3, 70, 6, 2, 32},   // 6 pairs, groups of 3
  };
  for (std::int64_t limit : {std::int64_t{4096}, std::int64_t{65536}})
    for (const auto& s : shapes) {
      SCOPED_TRACE("score elements per call <= " + std::to_string(limit));
      expect_attention_matches_cpu(s, {AttentionPath::gemm, limit});
    }
}

TEST_F(Ops, GemmAttentionTakesHeadDimsAboveTheFusedKernelsLimit) {
  expect_attention_matches_cpu({1, 40, 2, 1, 160}, {AttentionPath::gemm});
}

TEST_F(Ops, AttentionIsBitwiseReproducible) {
  const reference::AttentionShape s{2, 70, 4, 2, 64};
  const int nq = s.B * s.T * s.Hq * s.D, nkv = s.B * s.T * s.Hkv * s.D;
  const Vec q = random_vec(nq, 51), k = random_vec(nkv, 52), v = random_vec(nkv, 53),
            dout = random_vec(nq, 54);
  for (AttentionPath path : kAttentionPaths) {
    SCOPED_TRACE(attention_path_name(path));
    GpuRunner gpu({path});
    const AttentionRun a = run_attention(gpu, DType::bf16, q, k, v, dout, s);
    const AttentionRun b = run_attention(gpu, DType::bf16, q, k, v, dout, s);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.lse, b.lse);
    EXPECT_EQ(a.dq, b.dq);
    EXPECT_EQ(a.dk, b.dk);
    EXPECT_EQ(a.dv, b.dv);
  }
}

TEST_F(Ops, FusedAttentionRejectsHeadDimAbove128) {
  GpuRunner gpu({AttentionPath::fused});
  Tensor q = gpu.empty(DType::bf16, {1, 4, 1, 256}), out = gpu.empty(DType::bf16, {1, 4, 1, 256});
  Tensor lse = gpu.empty(DType::f32, {1, 1, 4});
  EXPECT_THROW(gpu.backend().attention_forward(out, lse, q, q, q), Error);
}

// ---- SwiGLU --------------------------------------------------------------------------

TEST_F(Ops, SwigluMatchesCpu) {
  constexpr int n = 5000;
  for (DType t : kGpuStorageTypes) {
    SCOPED_TRACE(dtype_name(t));
    const Vec g = rounded(random_vec(n, 61, 3.0), t), u = rounded(random_vec(n, 62), t),
              d = rounded(random_vec(n, 63), t);
    auto run = [&](auto& r) {
      Tensor tg = r.upload(g, t, {n}), tu = r.upload(u, t, {n}), out = r.empty(t, {n});
      Tensor dg = r.empty(t, {n}), du = r.empty(t, {n});
      r.backend().swiglu_forward(out, tg, tu);
      r.backend().swiglu_backward(dg, du, r.upload(d, t, {n}), tg, tu);
      return std::vector<Vec>{r.download(out), r.download(dg), r.download(du)};
    };
    OpRunner cpu;
    GpuRunner gpu;
    const auto want = run(cpu), got = run(gpu);
    expect_close(got[0], want[0], tolerance(t), "out");
    expect_close(got[1], want[1], tolerance(t), "dgate");
    expect_close(got[2], want[2], tolerance(t), "dup");
  }
}

// ---- cross-entropy -------------------------------------------------------------------

TEST_F(Ops, CrossEntropyMatchesCpuAndBackwardWorksInPlace) {
  for (auto [N, V] : {std::pair{6, 19}, std::pair{20, 5000}}) {  // V > one block's 512 threads
    for (DType t : kGpuStorageTypes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " V=" + std::to_string(V));
      const Vec logits = rounded(random_vec(N * V, 71, 2.0), t);
      const Tokens targets = random_tokens(N, V, 72);
      auto run = [&](auto& r) {
        Tensor tl = r.upload(logits, t, {N, V}), tt = r.upload_tokens(targets),
               losses = r.empty(acc_type(t), {N});
        r.backend().cross_entropy_forward(losses, tl, tt);
        r.backend().cross_entropy_backward(tl, tl, tt, 0.5f);  // dlogits overwrite the logits
        return std::pair{r.download(losses), r.download(tl)};
      };
      OpRunner cpu;
      GpuRunner gpu;
      const auto want = run(cpu), got = run(gpu);
      expect_close(got.first, want.first, tolerance(DType::f32), "losses");
      expect_close(got.second, want.second, tolerance(t), "dlogits");
    }
  }
}

TEST_F(Ops, CrossEntropyRejectsTargetOutsideVocabulary) {
  GpuRunner gpu;
  Tensor logits = gpu.upload(random_vec(2 * 5, 81), DType::bf16, {2, 5}), losses = gpu.empty(DType::f32, {2});
  Tensor targets = gpu.upload_tokens({0, -1});
  EXPECT_THROW(gpu.backend().cross_entropy_forward(losses, logits, targets), Error);
}

}  // namespace
}  // namespace mlpo::testing
