// tests/attention/kv_rerotate_test.cpp — the KV cache re-rotation direction, checked on the stored
// keys of a batched float cache whose schedule switches inside one multi-token append (a second,
// independent test of the sign besides the step-by-step one in kv_cache_test.cpp).
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/rope/rope.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"

using posenc_test::tensor4;

TEST_CASE("kv cache: keys re-rotated in a multi-token append equal keys rotated afresh (float, batch 2)",
          "[attention][kv_cache]") {
  const std::ptrdiff_t B = 2, H = 2, D = 16, first = 5, more = 4;
  const posenc::rope enc({.head_dim = static_cast<int>(D),
                          .scaling = posenc::dynamic_ntk_scaling{.factor = 2, .original_max_position = 6}});
  const tensor4<float> k0(B, first, H, D, 21), v0(B, first, H, D, 22), k1(B, more, H, D, 23), v1(B, more, H, D, 24);
  posenc::kv_cache<float> cache({.batch = B, .kv_heads = H, .head_dim = D});
  std::vector<std::int64_t> p0, p1;
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    for (std::ptrdiff_t t = 0; t < first; ++t) p0.push_back(t);
    for (std::ptrdiff_t t = 0; t < more; ++t) p1.push_back(first + t);
  }
  CHECK(cache.append(enc, k0.cview(), v0.cview(), p0) == posenc::cache_event::none);
  CHECK(cache.append(enc, k1.cview(), v1.cview(), p1) == posenc::cache_event::rerotated);
  const auto to = enc.at(first + more), from = enc.at(first);
  REQUIRE(to != from);
  // The old keys as they should be now (rotated under `to`) and as they were (under `from`).
  tensor4<float> want = k0, stale = k0;
  enc.rotate(want.view(), p0, to);
  enc.rotate(stale.view(), p0, from);
  std::vector<float> got;
  const auto kv = cache.keys();
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t t = 0; t < first; ++t)
      for (std::ptrdiff_t h = 0; h < H; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d) got.push_back(kv(b, t, h, d));
  POSENC_CHECK_CLOSE(got, want.data, 2e-6, 1e-6);
  // The switch moves the keys by far more than the tolerance, so a wrong direction cannot pass.
  const auto moved = posenc_test::compare(want.data, stale.data, 1e-3, 0);
  CHECK(moved.excess > 0);
}
