// RoPE properties: norm preservation, relative invariance, inverse, delta, rerotate, strided views,
// 16-bit storage bounds, length-dependent selection, the table path, and the accuracy sweep.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/rope/rope.hpp>

#include "support/check.hpp"

using namespace posenc;

namespace {

std::vector<double> random_vec(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

/// rotated copy of x ([tokens, heads, D], batch 1) in storage T, returned as doubles.
template <class T = double>
std::vector<double> fwd(const rope& r, const std::vector<double>& x, const std::vector<std::int64_t>& pos,
                        std::ptrdiff_t heads) {
  std::vector<T> b;
  for (double v : x) b.push_back(static_cast<T>(v));
  const auto D = r.head_dim();
  r.transform_q(tensor_view<T>::bthd(b.data(), 1, static_cast<std::ptrdiff_t>(pos.size()), heads, D), pos);
  return std::vector<double>(b.begin(), b.end());
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::vector<rope_config> static_configs() {
  const std::vector<double> ff{1, 1.5, 2, 3, 4, 6, 8, 16};
  return {
      {.head_dim = 16},
      {.head_dim = 16, .layout = kernels::pairing::interleaved},
      {.head_dim = 20, .rotary_dim = 8, .rotary_offset = 4, .theta = 5e5},
      {.head_dim = 24, .partial_rotary_factor = 0.5, .partial_mode = partial_rotary_mode::proportional},
      {.head_dim = 16, .scaling = linear_scaling{.factor = 4}},
      {.head_dim = 16, .scaling = ntk_scaling{.alpha = 4}},
      {.head_dim = 16, .scaling = yarn_scaling{.factor = 4, .original_max_position = 64}},
      {.head_dim = 16, .scaling = llama3_scaling{.factor = 8, .original_max_position = 64}},
      {.head_dim = 16, .scaling = frequency_factors{.factors = ff}},
      {.head_dim = 16,
       .scaling =
           dynamic_ntk_scaling{
               .factor = 2, .original_max_position = 64, .length_source = dynamic_length_source::fixed_max}},
      {.head_dim = 16,
       .scaling = longrope_scaling{.short_factor = ff,
                                   .long_factor = ff,
                                   .original_max_position = 64,
                                   .factor = 4.0,
                                   .switch_policy = longrope_switch::always_long}},
  };
}

}  // namespace

TEST_CASE("norm preservation with M = 1 (float and double storage)", "[rope][property]") {
  for (const auto& c : static_configs()) {
    const rope r(c);
    if (r.base_frequencies().attention_scaling != 1.0) continue;
    INFO("scaling " << c.scaling.index() << " D " << c.head_dim);
    const std::vector<std::int64_t> pos{0, 1, 100, 65535, -7, 1 << 30};
    const auto x = random_vec(pos.size() * 2 * static_cast<std::size_t>(c.head_dim), 1);
    const auto yd = fwd<double>(r, x, pos, 2);
    const auto yf = fwd<float>(r, x, pos, 2);
    const std::size_t D = static_cast<std::size_t>(c.head_dim);
    for (std::size_t row = 0; row < pos.size() * 2; ++row) {
      const std::vector<double> a(x.begin() + static_cast<std::ptrdiff_t>(row * D),
                                  x.begin() + static_cast<std::ptrdiff_t>((row + 1) * D));
      const std::vector<double> b(yd.begin() + static_cast<std::ptrdiff_t>(row * D),
                                  yd.begin() + static_cast<std::ptrdiff_t>((row + 1) * D));
      const std::vector<double> f(yf.begin() + static_cast<std::ptrdiff_t>(row * D),
                                  yf.begin() + static_cast<std::ptrdiff_t>((row + 1) * D));
      CHECK(std::sqrt(dot(b, b)) == Approx(std::sqrt(dot(a, a))).epsilon(1e-14));
      CHECK(std::sqrt(dot(f, f)) == Approx(std::sqrt(dot(a, a))).epsilon(1e-6));
    }
  }
}

TEST_CASE("relative invariance <R(a)q, R(b)k> = <R(a+t)q, R(b+t)k> for every length-independent schedule",
          "[rope][property]") {
  for (const auto& c : static_configs()) {
    const rope r(c);
    INFO("scaling " << c.scaling.index() << " D " << c.head_dim);
    const auto q = random_vec(static_cast<std::size_t>(c.head_dim), 2),
               k = random_vec(static_cast<std::size_t>(c.head_dim), 3);
    for (std::int64_t t : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{1} << 24, std::int64_t{3} << 30}) {
      for (auto [a, b] : {std::pair<std::int64_t, std::int64_t>{5, 2}, {100, 300}, {0, 0}}) {
        const double s0 = dot(fwd(r, q, {a}, 1), fwd(r, k, {b}, 1));
        const double s1 = dot(fwd(r, q, {a + t}, 1), fwd(r, k, {b + t}, 1));
        CHECK(s1 == Approx(s0).margin(1e-12));
      }
    }
  }
}

TEST_CASE("inverse o forward = identity (also with M != 1); delta(d) o forward(p) = forward(p + d)",
          "[rope][property]") {
  for (const auto& c : static_configs()) {
    const rope r(c);
    INFO("scaling " << c.scaling.index() << " M " << r.base_frequencies().attention_scaling);
    const std::vector<std::int64_t> pos{0, 3, 4097, 1 << 20, -5};
    const auto x = random_vec(pos.size() * 3 * static_cast<std::size_t>(c.head_dim), 4);
    std::vector<double> y = x;
    auto view = tensor_view<double>::bthd(y.data(), 1, 5, 3, c.head_dim);
    r.rotate(view, pos, r.base_frequencies());
    r.rotate(view, pos, r.base_frequencies(), kernels::rotation::inverse);
    POSENC_CHECK_CLOSE(y, x, 1e-14, 0.0);

    std::vector<float> yf(x.begin(), x.end());
    auto vf = tensor_view<float>::bthd(yf.data(), 1, 5, 3, c.head_dim);
    r.transform_k(vf, pos);
    r.rotate(vf, pos, r.base_frequencies(), kernels::rotation::inverse);
    POSENC_CHECK_CLOSE(yf, x, 1e-6, 0.0);

    const std::vector<std::int64_t> delta{7, -3, 100, 1 << 20, 0};
    std::vector<std::int64_t> moved;
    for (std::size_t i = 0; i < pos.size(); ++i) moved.push_back(pos[i] + delta[i]);
    std::vector<double> z = x;
    auto zv = tensor_view<double>::bthd(z.data(), 1, 5, 3, c.head_dim);
    r.transform_k(zv, pos);
    r.rotate_delta(zv, delta, r.base_frequencies());
    POSENC_CHECK_CLOSE(z, fwd(r, x, moved, 3), 1e-13, 0.0);
  }
}

TEST_CASE("rerotate(from, to) == fresh rotation under `to` (dynamic NTK, LongRoPE)", "[rope][property][kv]") {
  const std::vector<double> s8{1, 1, 1, 1, 1, 1, 1, 1}, l8{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<rope_config> cs{
      {.head_dim = 16, .scaling = dynamic_ntk_scaling{.factor = 2, .original_max_position = 64}},
      {.head_dim = 16,
       .scaling = longrope_scaling{.short_factor = s8,
                                   .long_factor = l8,
                                   .original_max_position = 64,
                                   .factor = 4.0,
                                   .attention_factor = 1.3}},
  };
  for (const auto& c : cs) {
    const rope r(c);
    REQUIRE(r.schedule().length_dependent());
    const std::vector<std::int64_t> pos{0, 1, 30, 63};
    const auto x = random_vec(4 * 2 * 16, 5);
    const auto from = r.at(64), to = r.at(200);
    REQUIRE(from.inv_freq != to.inv_freq);
    std::vector<double> k = x, fresh = x;
    r.rotate(tensor_view<double>::bthd(k.data(), 1, 4, 2, 16), pos, from);
    r.rerotate(tensor_view<double>::bthd(k.data(), 1, 4, 2, 16), pos, from, to);
    r.rotate(tensor_view<double>::bthd(fresh.data(), 1, 4, 2, 16), pos, to);
    POSENC_CHECK_CLOSE(k, fresh, 1e-13, 0.0);
    std::vector<float> kf(x.begin(), x.end());
    r.rotate(tensor_view<float>::bthd(kf.data(), 1, 4, 2, 16), pos, from);
    r.rerotate(tensor_view<float>::bthd(kf.data(), 1, 4, 2, 16), pos, from, to);
    POSENC_CHECK_CLOSE(kf, fresh, 1e-6, 0.0);
  }
}

TEST_CASE("length-dependent schedules pick frequencies from max(positions) + 1 (boundaries L0, L0 + 1)",
          "[rope][property]") {
  const std::vector<double> s8(8, 1.0), l8{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<rope_config> cs{
      {.head_dim = 16, .scaling = dynamic_ntk_scaling{.factor = 2, .original_max_position = 64}},
      {.head_dim = 16,
       .scaling = longrope_scaling{.short_factor = s8, .long_factor = l8, .original_max_position = 64, .factor = 4.0}},
  };
  for (const auto& c : cs) {
    const rope r(c);
    for (std::int64_t last : {62, 63, 64, 200}) {  // effective lengths 63, L0 = 64, L0 + 1 = 65, 201
      INFO("max position " << last);
      const std::vector<std::int64_t> pos{0, 5, last};
      CHECK(r.effective_length(pos) == last + 1);
      const auto x = random_vec(3 * 16, 6);
      std::vector<double> a = x, b = x;
      r.transform_q(tensor_view<double>::bthd(a.data(), 1, 3, 1, 16), pos);
      r.rotate(tensor_view<double>::bthd(b.data(), 1, 3, 1, 16), pos, r.at(last + 1));
      CHECK(a == b);
      if (last + 1 <= 64)
        CHECK(r.at(last + 1) == r.base_frequencies());
      else
        CHECK_FALSE(r.at(last + 1).inv_freq == r.base_frequencies().inv_freq);
    }
  }
}

TEST_CASE("any strides: [B,H,T,D], strided dim axis and chunking give identical results", "[rope][property]") {
  const rope r(rope_config{.head_dim = 128, .theta = 5e5});
  const std::ptrdiff_t B = 2, T = 70, H = 3, D = 128;  // T > chunk (2048 / 64 = 32 tokens)
  const auto x = random_vec(static_cast<std::size_t>(B * T * H * D), 8);
  std::vector<std::int64_t> pos;
  for (std::ptrdiff_t i = 0; i < B * T; ++i) pos.push_back((i * 7919) % 100000 - 50);
  std::vector<float> a(x.begin(), x.end());
  r.transform_q(tensor_view<float>::bthd(a.data(), B, T, H, D), pos);
  // same logical tensor in [B, H, T, D] memory
  std::vector<float> b(a.size()), c(a.size() * 2);
  auto vb = tensor_view<float>::bhtd(b.data(), B, H, T, D);
  auto vc = tensor_view<float>::strided(c.data(), {B, T, H, D}, {T * H * D * 2, H * D * 2, D * 2, 2});
  for (std::ptrdiff_t i = 0; i < B; ++i)
    for (std::ptrdiff_t t = 0; t < T; ++t)
      for (std::ptrdiff_t h = 0; h < H; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d)
          vb(i, t, h, d) = vc(i, t, h, d) =
              static_cast<float>(x[static_cast<std::size_t>(((i * T + t) * H + h) * D + d)]);
  r.transform_q(vb, pos);
  r.transform_q(vc, pos);
  auto va = tensor_view<float>::bthd(a.data(), B, T, H, D);
  bool same = true;
  for (std::ptrdiff_t i = 0; i < B; ++i)
    for (std::ptrdiff_t t = 0; t < T; ++t)
      for (std::ptrdiff_t h = 0; h < H; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d)
          same = same && va(i, t, h, d) == vb(i, t, h, d) && va(i, t, h, d) == vc(i, t, h, d);
  CHECK(same);
  for (std::size_t i = 1; i < c.size(); i += 2) CHECK(c[i] == 0.0f);  // the gaps were not touched
}

TEST_CASE("pass-through: tail, offset prefix and zero-frequency proportional pairs are untouched", "[rope][property]") {
  const rope pre(rope_config{.head_dim = 24, .rotary_dim = 8, .rotary_offset = 4});
  const auto x = random_vec(24, 9);
  const auto y = fwd(pre, x, {12345}, 1);
  for (std::size_t d = 0; d < 24; ++d)
    if (d < 4 || d >= 12) CHECK(y[d] == x[d]);
  const rope prop(
      rope_config{.head_dim = 16, .partial_rotary_factor = 0.5, .partial_mode = partial_rotary_mode::proportional});
  const auto z = fwd(prop, x, {12345}, 1);  // pairs (k, k + 8); k = 4..7 have w = 0
  for (std::size_t k = 4; k < 8; ++k) {
    CHECK(z[k] == x[k]);
    CHECK(z[k + 8] == x[k + 8]);
  }
  CHECK(z[0] != x[0]);
}

TEST_CASE("bfloat16 / float16 storage vs float within the storage rounding bound", "[rope][property]") {
  // Inputs are first rounded to the 16-bit type, so the only difference from the float path is the
  // final rounding of each output: <= half an ulp of the 16-bit type relative to max |x|
  // (bf16: 2^-8, f16: 2^-11), plus float rounding. Documented bound: bf16 4e-3, f16 5e-4 (|x| <= 1).
  const rope r(rope_config{.head_dim = 64, .scaling = yarn_scaling{.factor = 4, .original_max_position = 64}});
  const std::vector<std::int64_t> pos{0, 17, 4096, 1 << 20};
  auto x = random_vec(4 * 64, 10);
  const double M = r.base_frequencies().attention_scaling;
  auto run16 = [&](auto tag, double bound) {
    using H = decltype(tag);
    std::vector<H> h;
    std::vector<float> f;
    for (double v : x) {
      h.push_back(H(static_cast<float>(v)));
      f.push_back(static_cast<float>(h.back()));
    }
    r.transform_q(tensor_view<H>::bthd(h.data(), 1, 4, 1, 64), pos);
    r.transform_q(tensor_view<float>::bthd(f.data(), 1, 4, 1, 64), pos);
    std::vector<double> hd;
    for (auto v : h) hd.push_back(static_cast<double>(static_cast<float>(v)));
    POSENC_CHECK_CLOSE(hd, f, bound * M * std::sqrt(2.0), 0.0);
  };
  run16(bfloat16{}, 1.0 / 256);
  run16(float16{}, 1.0 / 2048);
}

TEST_CASE("table path equals on-the-fly path, inside and outside the table", "[rope][property][table]") {
  const rope r(
      rope_config{.head_dim = 32, .theta = 1e6, .scaling = yarn_scaling{.factor = 8, .original_max_position = 256}});
  const cos_sin_table<float> tab(r.base_frequencies(), 100, 50);
  CHECK(tab.contains(100));
  CHECK(tab.contains(149));
  CHECK_FALSE(tab.contains(150));
  CHECK_FALSE(tab.contains(99));
  const std::vector<std::int64_t> pos{100, 120, 149, 150, 5, 1 << 25};
  const auto x = random_vec(6 * 2 * 32, 11);
  std::vector<float> a(x.begin(), x.end()), b(x.begin(), x.end());
  r.transform_q(tensor_view<float>::bthd(a.data(), 1, 6, 2, 32), pos);
  r.rotate(tensor_view<float>::bthd(b.data(), 1, 6, 2, 32), pos, tab);
  CHECK(a == b);
  CHECK_THROWS_AS(cos_sin_table<float>(r.base_frequencies(), 0, -1), config_error);
}

TEST_CASE("every angle_source gives the same bits: table rows in place, copied, on the fly",
          "[rope][property][table]") {
  for (auto layout : {kernels::pairing::half_split, kernels::pairing::interleaved}) {
    for (auto mode : {angle_mode::exact, angle_mode::reference_fp32}) {
      const rope r(rope_config{.head_dim = 64, .rotary_dim = 48, .theta = 5e5, .layout = layout, .angles = mode});
      const cos_sin_table<float> tab(r.base_frequencies(), 10, 300, mode);
      // inside: every position covered (rows read in place); mixed: some outside (rows copied);
      // consecutive per batch (rows read at a stride), up to the table's last row; almost: one
      // batch consecutive but for one token, past the table's end, or with the right first and
      // last positions but not consecutive between (each must take the general paths).
      std::vector<std::int64_t> inside, mixed, consecutive, gap, past_end, ends_only;
      for (std::int64_t i = 0; i < 2 * 37; ++i) {
        inside.push_back(10 + (i * 53) % 300);
        mixed.push_back(i % 5 == 0 ? 400 + i : 10 + (i * 29) % 300);
        const std::int64_t t = i % 37, second = i >= 37;
        consecutive.push_back(second ? 309 - 36 + t : 10 + t);
        gap.push_back(second ? 200 + t + (t == 20) : 10 + t);
        past_end.push_back(second ? 290 + t : 10 + t);
        ends_only.push_back(second && t > 0 && t < 36 ? 236 - t : 200 + t);
      }
      for (const auto* pos : {&inside, &mixed, &consecutive, &gap, &past_end, &ends_only}) {
        for (auto dir : {kernels::rotation::forward, kernels::rotation::inverse}) {
          const auto x = random_vec(2 * 37 * 3 * 64, 5);
          const std::vector<float> x0(x.begin(), x.end());
          std::vector<float> a = x0, b = a, c = a, d = a;
          const auto view = [](std::vector<float>& v) { return tensor_view<float>::bthd(v.data(), 2, 37, 3, 64); };
          r.rotate(view(a), *pos, tab, dir, angle_source::automatic);
          r.rotate(view(b), *pos, tab, dir, angle_source::table);
          r.rotate(view(c), *pos, tab, dir, angle_source::on_the_fly);
          CHECK(a == b);
          CHECK(b == c);
          CHECK(a != x0);  // it did rotate
          // A strided dim axis (gathered row by row) gives the same bits as the contiguous view.
          std::vector<float> wide(2 * d.size());
          for (std::size_t i = 0; i < d.size(); ++i) wide[2 * i] = d[i];
          const auto strided =
              tensor_view<float>::strided(wide.data(), {2, 37, 3, 64}, {37 * 3 * 128, 3 * 128, 128, 2});
          r.rotate(strided, *pos, tab, dir, angle_source::table);
          for (std::size_t i = 0; i < d.size(); ++i) d[i] = wide[2 * i];
          CHECK(d == b);
        }
      }
    }
  }
  // decode: one token per batch, each at its own position (one strided call per batch)
  {
    const rope r(rope_config{.head_dim = 64, .theta = 5e5});
    const cos_sin_table<float> tab(r.base_frequencies(), 0, 4096);
    for (const std::vector<std::int64_t>& pos :
         {std::vector<std::int64_t>{4095, 7}, std::vector<std::int64_t>{0, 4096}}) {
      const auto x = random_vec(2 * 1 * 5 * 64, 9);
      std::vector<float> a(x.begin(), x.end()), c = a;
      r.rotate(tensor_view<float>::bthd(a.data(), 2, 1, 5, 64), pos, tab);
      r.rotate(tensor_view<float>::bthd(c.data(), 2, 1, 5, 64), pos, tab, kernels::rotation::forward,
               angle_source::on_the_fly);
      CHECK(a == c);
    }
  }
  // bf16 rows, table against on the fly, and the automatic rule
  const rope r(rope_config{.head_dim = 32});
  const cos_sin_table<float> tab(r.base_frequencies(), 0, 64);
  std::vector<bfloat16> h(8 * 2 * 32), g;
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = bfloat16(static_cast<float>(i % 17) / 8.f - 1.f);
  g = h;
  const std::vector<std::int64_t> pos{0, 3, 9, 63, 17, 5, 40, 1};
  r.rotate(tensor_view<bfloat16>::bthd(h.data(), 1, 8, 2, 32), pos, tab);
  r.rotate(tensor_view<bfloat16>::bthd(g.data(), 1, 8, 2, 32), pos, tab, kernels::rotation::forward,
           angle_source::on_the_fly);
  CHECK(std::equal(h.begin(), h.end(), g.begin(), [](bfloat16 p, bfloat16 q) { return p.bits == q.bits; }));
  CHECK(choose_angle_source(angle_source::automatic) == angle_source::table);
  CHECK(choose_angle_source(angle_source::on_the_fly) == angle_source::on_the_fly);
}

TEST_CASE("accuracy sweep: float rows within 2e-7 of exact near 2^16, 2^20, 2^24, 2^31", "[rope][accuracy]") {
  for (double theta : {1e4, 5e5, 1e6}) {
    const rope r(rope_config{.head_dim = 128, .theta = theta});
    const auto& w = r.base_frequencies().inv_freq;
    for (int e : {16, 20, 24, 31}) {
      const std::int64_t first = (std::int64_t{1} << e) - 40;
      const cos_sin_table<float> tab(r.base_frequencies(), first, 80);
      double worst = 0;
      for (std::int64_t p = first; p < first + 80; ++p) {
        for (int k = 0; k < 64; ++k) {
          // long double reference: p * w rounded to a 64-bit mantissa (error <= 2^-64 * 2^31 rad ~ 1e-10)
          const long double ang =
              static_cast<long double>(p) * static_cast<long double>(w[static_cast<std::size_t>(k)]);
          const long double c = std::cos(ang), s = std::sin(ang);
          worst = std::max(worst, static_cast<double>(std::fabs(static_cast<long double>(tab.cos_row(p)[k]) - c)));
          worst = std::max(worst, static_cast<double>(std::fabs(static_cast<long double>(tab.sin_row(p)[k]) - s)));
        }
      }
      INFO("theta " << theta << " near 2^" << e << ": worst " << worst);
      CHECK(worst <= 2e-7);
    }
  }
}
