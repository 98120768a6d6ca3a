// AdamW with its integrity check in one pass (kernels/cpu/adamw_crc.hpp) against its twin, the
// separate passes: CRC32C of each array, AdamW, CRC32C again. Same bits, same CRCs; and
// offload::checked_adamw, which picks between them per chunk, keeps a mapped chunk unchanged
// when its check fails.
#include "executor/offload/checked_adamw.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "executor/io/crc32c.hpp"
#include "kernels/cpu/adamw_crc.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::offload {
namespace {

struct Arrays {
  std::vector<float> p, m, v, g32;
  std::vector<bf16> g16;
  Arrays(std::size_t n, unsigned seed) : p(n), m(n), v(n), g32(n), g16(n) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d;
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = d(rng);
      m[i] = 0.01f * d(rng);
      v[i] = 1e-4f * std::abs(d(rng));
      g32[i] = 0.1f * d(rng);
      g16[i] = float_to_bf16(0.1f * d(rng));
    }
  }
};

std::uint32_t crc_of(const std::vector<float>& a, std::size_t n) {
  return io::crc32c(a.data(), n * sizeof(float));
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AdamWCrc, OnePassEqualsTheSeparatePassesOnEveryShapeOfChunk) {
  if (!adamw_crc_available()) GTEST_SKIP() << "CPU has no AVX2 + VPCLMULQDQ: the separate passes run";
  AdamWParams params;
  params.weight_decay = 0.01f;
  params.step = 3;
  for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 15u, 16u, 17u, 63u, 1000u, 65533u, 65536u}) {
    for (bool fp32 : {false, true}) {
      for (bool out_copy : {false, true}) {
        for (bool separate_out : {false, true}) {
          Arrays want(n, 5), got(n, 5);
          const std::uint32_t before[3] = {crc_of(want.p, n), crc_of(want.m, n), crc_of(want.v, n)};
          std::vector<bf16> want_out(n), got_out(n);
          if (fp32)
            adamw_update_fp32grad(params, want.p.data(), want.m.data(), want.v.data(), want.g32.data(),
                                  out_copy ? want_out.data() : nullptr, n);
          else
            adamw_update_bf16grad(params, want.p.data(), want.m.data(), want.v.data(), want.g16.data(),
                                  out_copy ? want_out.data() : nullptr, n);
          std::vector<float> sp(n), sm(n), sv(n);
          const AdamWChunk chunk = separate_out ? AdamWChunk{got.p.data(), got.m.data(), got.v.data(),
                                                             sp.data(),    sm.data(),    sv.data()}
                                                : AdamWChunk{got.p.data(), got.m.data(), got.v.data(),
                                                             got.p.data(), got.m.data(), got.v.data()};
          const AdamWChunkCrcs crcs =
              adamw_crc_update(params, chunk, fp32 ? got.g32.data() : nullptr,
                               fp32 ? nullptr : got.g16.data(), out_copy ? got_out.data() : nullptr, n);
          if (separate_out) {
            got.p = sp;
            got.m = sm;
            got.v = sv;
          }
          const std::string what = "n " + std::to_string(n) + (fp32 ? " fp32" : " bf16") +
                                   (out_copy ? " out" : "") + (separate_out ? " separate" : " in place");
          EXPECT_TRUE(same_bits(got.p, want.p)) << what;
          EXPECT_TRUE(same_bits(got.m, want.m)) << what;
          EXPECT_TRUE(same_bits(got.v, want.v)) << what;
          EXPECT_EQ(std::memcmp(got_out.data(), want_out.data(), n * sizeof(bf16)), 0) << what;
          EXPECT_EQ(crcs.before[0], before[0]) << what;
          EXPECT_EQ(crcs.before[1], before[1]) << what;
          EXPECT_EQ(crcs.before[2], before[2]) << what;
          EXPECT_EQ(crcs.after[0], crc_of(want.p, n)) << what;
          EXPECT_EQ(crcs.after[1], crc_of(want.m, n)) << what;
          EXPECT_EQ(crcs.after[2], crc_of(want.v, n)) << what;
        }
      }
    }
  }
}

// Two subgroups' worth of steps through checked_adamw, a mask that cuts one chunk in two (that
// chunk takes the separate passes, the others the fused one where the CPU has it), mapped and
// buffered alike: the bits of adamw_masked, and each chunk's record its CRC.
TEST(CheckedAdamW, EqualsTheMaskedUpdateAndRecordsEveryChunk) {
  const std::size_t n = 3 * static_cast<std::size_t>(InPlaceIntegrity::kChunk) + 100;
  RankShard shard;
  shard.total = static_cast<std::int64_t>(n);
  shard.elements = static_cast<std::int64_t>(n);
  const WeightDecayMask mask({{70000, 70100}}, shard);
  ThreadPool pool(2);
  for (bool mapped : {false, true}) {
    Arrays want(n, 9), got(n, 9);
    InPlaceIntegrity integrity;
    integrity.add_subgroup(0, static_cast<std::int64_t>(n));
    AdamWParams params;
    params.weight_decay = 0.1f;
    for (int step = 1; step <= 3; ++step) {
      params.step = step;
      adamw_masked(pool, params, mask, 0, n, want.p.data(), want.m.data(), want.v.data(), want.g16.data(),
                   nullptr, nullptr);
      checked_adamw(pool, integrity, 0, mask, 0, params, got.p.data(), got.m.data(), got.v.data(), nullptr,
                    got.g16.data(), nullptr, n, mapped, "test");
    }
    EXPECT_TRUE(same_bits(got.p, want.p)) << mapped;
    EXPECT_TRUE(same_bits(got.m, want.m)) << mapped;
    EXPECT_TRUE(same_bits(got.v, want.v)) << mapped;
    // The records are the arrays' CRCs: a verify of the unchanged arrays passes.
    for (std::int64_t c = 0; c * InPlaceIntegrity::kChunk < static_cast<std::int64_t>(n); ++c) {
      const std::size_t at = static_cast<std::size_t>(c * InPlaceIntegrity::kChunk);
      const std::size_t len = std::min(static_cast<std::size_t>(InPlaceIntegrity::kChunk), n - at);
      EXPECT_NO_THROW(
          integrity.verify(0, c, got.p.data() + at, got.m.data() + at, got.v.data() + at, len, "test"));
    }
  }
}

// A flipped byte in v of a mapped chunk: the update stops naming it, and the chunk's bytes are
// as they were (the new values never reached the file).
TEST(CheckedAdamW, AMappedChunkThatFailsItsCheckIsLeftAsItWas) {
  const std::size_t n = 2 * static_cast<std::size_t>(InPlaceIntegrity::kChunk);
  ThreadPool pool(1);
  Arrays a(n, 3);
  InPlaceIntegrity integrity;
  integrity.add_subgroup(0, static_cast<std::int64_t>(n));
  const WeightDecayMask every_element_decays;
  AdamWParams params;
  checked_adamw(pool, integrity, 0, every_element_decays, 0, params, a.p.data(), a.m.data(), a.v.data(),
                nullptr, a.g16.data(), nullptr, n, /*mapped=*/true, "tier 'host'");
  const std::size_t chunk = static_cast<std::size_t>(InPlaceIntegrity::kChunk);
  const std::size_t bad = chunk + 10;
  reinterpret_cast<unsigned char*>(&a.v[bad])[1] ^= 0x40;
  const Arrays before = a;
  params.step = 2;
  mlpo::testing::expect_refusal(
      [&] {
        checked_adamw(pool, integrity, 0, every_element_decays, 0, params, a.p.data(), a.m.data(), a.v.data(),
                      nullptr, a.g16.data(), nullptr, n, /*mapped=*/true, "tier 'host'");
      },
      {"tier 'host': CRC32C mismatch in v (second moment), elements " + std::to_string(chunk) + ".." +
       std::to_string(2 * chunk)},
      "no error");
  EXPECT_EQ(std::memcmp(a.p.data() + chunk, before.p.data() + chunk, chunk * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(a.m.data() + chunk, before.m.data() + chunk, chunk * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(a.v.data() + chunk, before.v.data() + chunk, chunk * sizeof(float)), 0);
}

}  // namespace
}  // namespace mlpo::offload
