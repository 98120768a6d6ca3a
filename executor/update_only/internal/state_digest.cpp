#include "executor/update_only/internal/state_digest.hpp"

#include <openssl/evp.h>

#include <memory>

#include "core/error.hpp"

namespace mlpo::update_only {

namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

class Sha256Hasher {
 public:
  Sha256Hasher() : ctx_(EVP_MD_CTX_new()) {
    MLPO_CHECK(ctx_ && EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1, "SHA-256 init");
  }
  void update(const void* data, std::size_t n) {
    MLPO_CHECK(EVP_DigestUpdate(ctx_.get(), data, n) == 1, "SHA-256 update");
  }
  Sha256 finish() {
    Sha256 out{};
    unsigned len = 0;
    MLPO_CHECK(EVP_DigestFinal_ex(ctx_.get(), out.data(), &len) == 1 && len == out.size(), "SHA-256 final");
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx_;
};

}  // namespace

Sha256 chunk_digest(const float* p, const float* m, const float* v, std::size_t n) {
  Sha256Hasher h;
  h.update(p, n * sizeof(float));
  h.update(m, n * sizeof(float));
  h.update(v, n * sizeof(float));
  return h.finish();
}

std::string combine_digests(std::span<const Sha256> chunk_digests) {
  Sha256Hasher h;
  for (const auto& d : chunk_digests) h.update(d.data(), d.size());
  Sha256 out = h.finish();
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (auto b : out) {
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

}  // namespace mlpo::update_only
