#pragma once
// Double-precision reference of every Backend op, forward and backward, for tests only.
// Written as directly from the formulas as possible (the attention reference builds the full
// probability matrix, the softmax is explicit) so it shares no structure with the fast code
// it checks. Tests verify each backward here against central finite differences of the
// forward here, then check each backend (BackendOps: CPU with bf16/f32/f64 storage, CUDA with
// bf16/f32) against these values.
// All tensors are flat row-major std::vector<double> with the shapes of kernels/backend.hpp.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace mlpo::reference {

using Vec = std::vector<double>;
using Tokens = std::vector<std::int32_t>;

// ---- embedding ----------------------------------------------------------------------
inline Vec embedding_forward(const Tokens& tokens, const Vec& table, int C) {
  Vec out(tokens.size() * C);
  for (std::size_t n = 0; n < tokens.size(); ++n)
    for (int c = 0; c < C; ++c) out[n * C + c] = table[tokens[n] * C + c];
  return out;
}
inline Vec embedding_backward(const Tokens& tokens, const Vec& dout, int V, int C) {
  Vec dtable(static_cast<std::size_t>(V) * C, 0.0);
  for (std::size_t n = 0; n < tokens.size(); ++n)
    for (int c = 0; c < C; ++c) dtable[tokens[n] * C + c] += dout[n * C + c];
  return dtable;
}

// ---- RMSNorm ------------------------------------------------------------------------
inline Vec rmsnorm_forward(const Vec& x, const Vec& w, int N, int C, double eps) {
  Vec out(x.size());
  for (int n = 0; n < N; ++n) {
    double ms = 0;
    for (int c = 0; c < C; ++c) ms += x[n * C + c] * x[n * C + c] / C;
    for (int c = 0; c < C; ++c) out[n * C + c] = x[n * C + c] / std::sqrt(ms + eps) * w[c];
  }
  return out;
}
struct RmsNormGrads {
  Vec dx, dw;
};
// y_c = x_c w_c / s with s = sqrt(mean(x^2) + eps); ds/dx_k = x_k / (C s).
inline RmsNormGrads rmsnorm_backward(const Vec& dout, const Vec& x, const Vec& w, int N, int C, double eps) {
  RmsNormGrads g{Vec(x.size(), 0.0), Vec(C, 0.0)};
  for (int n = 0; n < N; ++n) {
    const double* xr = &x[n * C];
    const double* dy = &dout[n * C];
    double ms = 0;
    for (int c = 0; c < C; ++c) ms += xr[c] * xr[c] / C;
    const double s = std::sqrt(ms + eps);
    double sum_dy_w_x = 0;
    for (int c = 0; c < C; ++c) sum_dy_w_x += dy[c] * w[c] * xr[c];
    for (int k = 0; k < C; ++k) {
      g.dx[n * C + k] = dy[k] * w[k] / s - sum_dy_w_x * xr[k] / (C * s * s * s);
      g.dw[k] += dy[k] * xr[k] / s;
    }
  }
  return g;
}

// ---- linear: out[n,o] = sum_i x[n,i] w[o,i] ------------------------------------------
inline Vec linear_forward(const Vec& x, const Vec& w, int N, int I, int O) {
  Vec out(static_cast<std::size_t>(N) * O, 0.0);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int i = 0; i < I; ++i) out[n * O + o] += x[n * I + i] * w[o * I + i];
  return out;
}
struct LinearGrads {
  Vec dx, dw;
};
inline LinearGrads linear_backward(const Vec& dout, const Vec& x, const Vec& w, int N, int I, int O) {
  LinearGrads g{Vec(x.size(), 0.0), Vec(w.size(), 0.0)};
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int i = 0; i < I; ++i) {
        g.dx[n * I + i] += dout[n * O + o] * w[o * I + i];
        g.dw[o * I + i] += dout[n * O + o] * x[n * I + i];
      }
  return g;
}

// ---- RoPE (rotate_half pairing), x: [B, T, H, D] ----------------------------------------
inline Vec rope_apply(const Vec& x, int B, int T, int H, int D, double theta, double sign) {
  Vec out(x.size());
  const int half = D / 2;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < half; ++i) {
          const double angle = sign * t / std::pow(theta, 2.0 * i / D);
          const std::size_t base = ((static_cast<std::size_t>(b) * T + t) * H + h) * D;
          const double x1 = x[base + i], x2 = x[base + i + half];
          out[base + i] = x1 * std::cos(angle) - x2 * std::sin(angle);
          out[base + i + half] = x1 * std::sin(angle) + x2 * std::cos(angle);
        }
  return out;
}
inline Vec rope_forward(const Vec& x, int B, int T, int H, int D, double theta) {
  return rope_apply(x, B, T, H, D, theta, 1);
}
inline Vec rope_backward(const Vec& dout, int B, int T, int H, int D, double theta) {
  return rope_apply(dout, B, T, H, D, theta, -1);
}

// ---- causal GQA attention: q [B,T,Hq,D], k/v [B,T,Hkv,D] -------------------------------
struct AttentionShape {
  int B, T, Hq, Hkv, D;
};
inline std::size_t at(const AttentionShape& s, int H, int b, int t, int h, int d) {
  return ((static_cast<std::size_t>(b) * s.T + t) * H + h) * s.D + d;
}
// Probabilities P[b][h][t][j] (zero above the diagonal), as one flat vector.
inline Vec attention_probabilities(const Vec& q, const Vec& k, const AttentionShape& s) {
  Vec P(static_cast<std::size_t>(s.B) * s.Hq * s.T * s.T, 0.0);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.Hq; ++h) {
      const int hk = h / (s.Hq / s.Hkv);
      for (int t = 0; t < s.T; ++t) {
        double* row = &P[((static_cast<std::size_t>(b) * s.Hq + h) * s.T + t) * s.T];
        double max = -INFINITY;
        for (int j = 0; j <= t; ++j) {
          double score = 0;
          for (int d = 0; d < s.D; ++d) score += q[at(s, s.Hq, b, t, h, d)] * k[at(s, s.Hkv, b, j, hk, d)];
          row[j] = score / std::sqrt(static_cast<double>(s.D));
          max = std::max(max, row[j]);
        }
        double sum = 0;
        for (int j = 0; j <= t; ++j) sum += (row[j] = std::exp(row[j] - max));
        for (int j = 0; j <= t; ++j) row[j] /= sum;
      }
    }
  return P;
}
inline Vec attention_forward(const Vec& q, const Vec& k, const Vec& v, const AttentionShape& s) {
  const Vec P = attention_probabilities(q, k, s);
  Vec out(q.size(), 0.0);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.Hq; ++h)
      for (int t = 0; t < s.T; ++t)
        for (int j = 0; j <= t; ++j)
          for (int d = 0; d < s.D; ++d)
            out[at(s, s.Hq, b, t, h, d)] +=
                P[((static_cast<std::size_t>(b) * s.Hq + h) * s.T + t) * s.T + j] *
                v[at(s, s.Hkv, b, j, h / (s.Hq / s.Hkv), d)];
  return out;
}
// log-sum-exp of each row of scores, [B, Hq, T].
inline Vec attention_lse(const Vec& q, const Vec& k, const AttentionShape& s) {
  Vec lse(static_cast<std::size_t>(s.B) * s.Hq * s.T);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.Hq; ++h)
      for (int t = 0; t < s.T; ++t) {
        double sum = 0;
        for (int j = 0; j <= t; ++j) {
          double score = 0;
          for (int d = 0; d < s.D; ++d)
            score += q[at(s, s.Hq, b, t, h, d)] * k[at(s, s.Hkv, b, j, h / (s.Hq / s.Hkv), d)];
          sum += std::exp(score / std::sqrt(static_cast<double>(s.D)));
        }
        lse[(static_cast<std::size_t>(b) * s.Hq + h) * s.T + t] = std::log(sum);
      }
  return lse;
}
struct AttentionGrads {
  Vec dq, dk, dv;
};
inline AttentionGrads attention_backward(const Vec& dout, const Vec& q, const Vec& k, const Vec& v,
                                         const AttentionShape& s) {
  const Vec P = attention_probabilities(q, k, s);
  AttentionGrads g{Vec(q.size(), 0.0), Vec(k.size(), 0.0), Vec(v.size(), 0.0)};
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.D));
  std::vector<double> dP(s.T);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.Hq; ++h) {
      const int hk = h / (s.Hq / s.Hkv);
      for (int t = 0; t < s.T; ++t) {
        const double* p = &P[((static_cast<std::size_t>(b) * s.Hq + h) * s.T + t) * s.T];
        // dP_j = dout_t . v_j; softmax backward: dS_j = P_j (dP_j - sum_i P_i dP_i).
        double pdp = 0;
        for (int j = 0; j <= t; ++j) {
          dP[j] = 0;
          for (int d = 0; d < s.D; ++d) dP[j] += dout[at(s, s.Hq, b, t, h, d)] * v[at(s, s.Hkv, b, j, hk, d)];
          pdp += p[j] * dP[j];
        }
        for (int j = 0; j <= t; ++j) {
          const double dS = p[j] * (dP[j] - pdp) * scale;
          for (int d = 0; d < s.D; ++d) {
            g.dv[at(s, s.Hkv, b, j, hk, d)] += p[j] * dout[at(s, s.Hq, b, t, h, d)];
            g.dq[at(s, s.Hq, b, t, h, d)] += dS * k[at(s, s.Hkv, b, j, hk, d)];
            g.dk[at(s, s.Hkv, b, j, hk, d)] += dS * q[at(s, s.Hq, b, t, h, d)];
          }
        }
      }
    }
  return g;
}

// ---- SwiGLU ---------------------------------------------------------------------------
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline Vec swiglu_forward(const Vec& gate, const Vec& up) {
  Vec out(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
  return out;
}
struct SwigluGrads {
  Vec dgate, dup;
};
inline SwigluGrads swiglu_backward(const Vec& dout, const Vec& gate, const Vec& up) {
  SwigluGrads g{Vec(gate.size()), Vec(gate.size())};
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const double sg = sigmoid(gate[i]);
    g.dup[i] = dout[i] * gate[i] * sg;
    g.dgate[i] = dout[i] * up[i] * (sg + gate[i] * sg * (1 - sg));
  }
  return g;
}

// ---- softmax cross-entropy ----------------------------------------------------------
inline Vec cross_entropy_forward(const Vec& logits, const Tokens& targets, int N, int V) {
  Vec losses(N);
  for (int n = 0; n < N; ++n) {
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += std::exp(logits[n * V + j]);
    losses[n] = std::log(sum) - logits[n * V + targets[n]];
  }
  return losses;
}
inline Vec cross_entropy_backward(const Vec& logits, const Tokens& targets, int N, int V, double scale) {
  Vec d(logits.size());
  for (int n = 0; n < N; ++n) {
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += std::exp(logits[n * V + j]);
    for (int j = 0; j < V; ++j)
      d[n * V + j] = scale * (std::exp(logits[n * V + j]) / sum - (j == targets[n] ? 1 : 0));
  }
  return d;
}

}  // namespace mlpo::reference
