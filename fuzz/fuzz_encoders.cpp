// fuzz/fuzz_encoders.cpp — libFuzzer harness for the encoders themselves: builds one encoder
// (sinusoidal, learned_absolute, shaw_relative, t5_bias, alibi, rope under every scaling, xpos, or a
// combined pair) from fuzzed configuration fields and applies it to small tensors at fuzzed
// positions, int64 extremes included. Each case either throws config_error (shape_error is one) or
// yields finite values; anything else (a non-finite value, a crash, a sanitizer report, another
// exception) aborts. Sizes that allocate are capped at 4096 (negative and zero ones are not). The
// one documented exception: xPos scale factors overflow the storage type far
// from the centre (rope/xpos.hpp), so its finiteness is checked only where they fit.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fuzzer/FuzzedDataProvider.h>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <posenc/posenc.hpp>

namespace {

using namespace posenc;
using i64 = std::int64_t;

[[noreturn]] void fail(const char* what, double v) {
  std::fprintf(stderr, "fuzz_encoders: %s produced %g\n", what, v);
  std::abort();
}
void finite(const char* what, double v) {
  if (!std::isfinite(v)) fail(what, v);
}

struct gen {
  FuzzedDataProvider& in;

  i64 position() {
    static constexpr i64 special[] = {std::numeric_limits<i64>::min(),
                                      std::numeric_limits<i64>::min() + 1,
                                      std::numeric_limits<i64>::max(),
                                      std::numeric_limits<i64>::max() - 1,
                                      std::numeric_limits<i64>::max() - 511,
                                      -1,
                                      0,
                                      1,
                                      i64{1} << 31,
                                      i64{1} << 53,
                                      i64{1} << 62,
                                      -(i64{1} << 62)};
    switch (in.ConsumeIntegralInRange(0, 3)) {
      case 0:
        return special[in.ConsumeIntegralInRange<std::size_t>(0, std::size(special) - 1)];
      case 1:
        return in.ConsumeIntegral<i64>();
      default:
        return in.ConsumeIntegralInRange<i64>(-64, 5000);
    }
  }
  /// A size-like integer: mostly small, sometimes negative, huge or extreme.
  i64 count(i64 lo, i64 hi) {
    switch (in.ConsumeIntegralInRange(0, 7)) {
      case 0:
        return in.ConsumeIntegral<i64>();
      case 1:
        return in.PickValueInArray<i64>({-1, 0, std::numeric_limits<i64>::max(), std::numeric_limits<i64>::min(),
                                         i64{1} << 40, (i64{1} << 40) + 1, std::numeric_limits<int>::max()});
      default:
        return in.ConsumeIntegralInRange<i64>(lo, hi);
    }
  }
  /// count() with values above `cap` cut to `cap`: sizes that allocate (a 2^40-head ALiBi, a
  /// 2^31-wide head) would only measure the allocator, as in the loader harnesses.
  i64 size(i64 lo, i64 hi, i64 cap = 4096) {
    const i64 v = count(lo, hi);
    return v > cap ? cap : v;
  }
  int small_int(int lo, int hi) {
    const i64 v = size(lo, hi);
    return v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max() ? hi + 1 : static_cast<int>(v);
  }
  double real(double lo, double hi) {
    switch (in.ConsumeIntegralInRange(0, 5)) {
      case 0:
        return in.PickValueInArray<double>({0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-300, 1e300, -1e300, INFINITY, -INFINITY,
                                            NAN, 4.0, 32.0, 1e4, 1e6, 5e-324, std::numeric_limits<double>::max()});
      case 1:
        return in.ConsumeFloatingPoint<double>();
      default:
        return in.ConsumeFloatingPointInRange(lo, hi);
    }
  }
  std::optional<double> maybe_real(double lo, double hi) {
    return in.ConsumeBool() ? std::optional<double>(real(lo, hi)) : std::nullopt;
  }
  bool flag() { return in.ConsumeBool(); }
  /// n values in [-1, 1], n capped (a config asking for more gets a mismatched table).
  std::vector<double> table(i64 n) {
    std::vector<double> t(static_cast<std::size_t>(n < 0 ? 0 : (n > 4096 ? 4096 : n)));
    for (auto& x : t) x = in.ConsumeFloatingPointInRange(-1.0, 1.0);
    return t;
  }
  std::vector<i64> positions(std::size_t n) {
    std::vector<i64> p(n);
    for (auto& x : p) x = position();
    return p;
  }
};

// ---- additive: sinusoidal, learned_absolute ----

template <class E>
void run_additive(const E& e, gen& g, const char* what) {
  const auto d = static_cast<std::size_t>(e.model_dim());
  if (d > 4096) return;
  std::vector<float> f(d);
  std::vector<double> r(d);
  for (int k = 0; k < 4; ++k) {
    const i64 p = g.position();
    try {
      for (auto& x : f) x = 0.25f;
      e.add(p, std::span<float>(f));
      for (float x : f) finite(what, x);
      e.add(p, std::span<double>(r));
      for (double x : r) finite(what, x);
    } catch (const config_error&) {
    }
  }
}

void fuzz_sinusoidal(gen& g) {
  sinusoidal_config c;
  c.d_model = g.size(0, 64);
  c.layout = g.flag() ? sinusoidal_layout::interleaved : sinusoidal_layout::concatenated;
  c.spacing = g.flag() ? sinusoidal_spacing::paper : sinusoidal_spacing::endpoint;
  c.min_timescale = g.real(0.1, 10);
  c.max_timescale = g.real(1, 1e6);
  c.position_origin = g.flag() ? 0 : g.position();
  if (g.flag()) c.padding_idx = g.position();
  c.odd_d = g.in.PickValueInArray({odd_d_policy::zero_pad, odd_d_policy::extra_sin, odd_d_policy::error});
  c.scale = g.real(-4, 4);
  c.allow_negative = g.flag();
  c.cached_positions = g.size(0, 64, 512);
  const sinusoidal s(c);
  run_additive(s, g, "sinusoidal.add");
  const auto d = static_cast<std::size_t>(s.model_dim());
  if (d > 4096) return;
  std::vector<double> row(d);
  const i64 p = g.position();
  try {
    s.encode(p, std::span<double>(row));
    for (double x : row) finite("sinusoidal.encode", x);
  } catch (const config_error&) {
  }
  s.encode_row(g.position(), std::span<double>(row));
  for (double x : row) finite("sinusoidal.encode_row", x);
}

void fuzz_learned(gen& g) {
  const i64 max_len = g.count(0, 16);
  const i64 d = g.count(0, 8);
  const bool exact = max_len > 0 && d > 0 && max_len <= 64 && d <= 64 && g.flag();
  const auto t = g.table(exact ? max_len * d : g.count(0, 64));
  learned_absolute_config c;
  c.max_len = max_len;
  c.model_dim = d;
  c.offset = g.flag() ? g.count(0, 4) : g.position();
  c.out_of_range = g.in.PickValueInArray(
      {out_of_range_policy::error, out_of_range_policy::clamp_to_last, out_of_range_policy::zero});
  const learned_absolute e(c, std::span<const double>(t));
  run_additive(e, g, "learned_absolute.add");
  try {
    for (double x : e.lookup(g.position())) finite("learned_absolute.lookup", x);
  } catch (const config_error&) {
  }
}

// ---- score bias: t5, alibi ----

template <class E>
void run_bias(const E& e, gen& g, const char* what) {
  const auto heads = e.num_heads();
  if (heads <= 0) return;
  for (int k = 0; k < 6; ++k) {
    const auto h = static_cast<std::ptrdiff_t>(g.in.ConsumeIntegralInRange<i64>(0, heads - 1));
    finite(what, e.bias(h, g.position(), g.position()));
  }
}

void fuzz_t5(gen& g) {
  t5_bias_config c;
  c.num_buckets = g.small_int(0, 64);
  c.max_distance = g.small_int(0, 256);
  c.bidirectional = g.flag();
  c.num_heads = static_cast<std::ptrdiff_t>(g.size(0, 4));
  const bool exact = c.num_buckets > 0 && c.num_buckets <= 64 && c.num_heads > 0 && c.num_heads <= 8 && g.flag();
  const auto t = g.table(exact ? i64{c.num_buckets} * c.num_heads : g.count(0, 64));
  const t5_bias e(c, std::span<const double>(t));
  run_bias(e, g, "t5.bias");
}

void fuzz_alibi(gen& g) {
  alibi_config c;
  c.num_heads = g.size(0, 64);
  c.max_bias = g.real(0, 16);
  c.mode =
      g.in.PickValueInArray({alibi_mode::symmetric, alibi_mode::causal_true_distance, alibi_mode::causal_row_shift});
  c.head_start = g.flag() ? 0 : g.count(0, 64);
  if (g.flag()) c.local_heads = g.size(0, 64);
  if (g.flag()) {
    const auto n = g.count(0, 8);
    for (i64 k = 0; k < n && k < 64; ++k) c.slopes.push_back(g.real(0, 1));
  }
  const alibi e(c);
  run_bias(e, g, "alibi.bias");
}

// ---- relative key/value: shaw ----

void fuzz_shaw(gen& g) {
  shaw_relative_config c;
  c.head_dim = static_cast<std::ptrdiff_t>(g.count(1, 8));
  c.k_left = g.count(0, 8);
  c.k_right = g.count(0, 8);
  c.sign = g.flag() ? shaw_sign::key_minus_query : shaw_sign::query_minus_key;
  c.clip = g.flag();
  c.use_value_term = g.flag();
  c.shared_across_heads = g.flag();
  c.num_heads = static_cast<std::ptrdiff_t>(g.count(1, 3));
  i64 n = g.count(0, 64);
  const bool small = c.head_dim > 0 && c.head_dim <= 8 && c.k_left >= 0 && c.k_left <= 8 && c.k_right >= 0 &&
                     c.k_right <= 8 && c.num_heads > 0 && c.num_heads <= 3;
  if (small && g.flag())
    n = (c.k_left + c.k_right + 1) * c.head_dim * (c.shared_across_heads ? 1 : static_cast<i64>(c.num_heads));
  const auto key = g.table(n);
  const auto value = c.use_value_term ? key : std::vector<double>{};
  const shaw_relative e(c, std::span<const double>(key), std::span<const double>(value));
  const auto heads = c.shared_across_heads ? 1 : c.num_heads;
  for (int k = 0; k < 4; ++k) {
    const std::vector<i64> q{g.position()}, kp{g.position()};
    try {
      e.check_positions(q, kp);
    } catch (const config_error&) {
      continue;  // out of range without clipping: refused, as documented
    }
    const auto h = static_cast<std::ptrdiff_t>(g.in.ConsumeIntegralInRange<i64>(0, heads - 1));
    for (double x : e.relative_key(h, q[0], kp[0])) finite("shaw.relative_key", x);
    for (double x : e.relative_value(h, q[0], kp[0])) finite("shaw.relative_value", x);
  }
}

// ---- qk transforms: rope (every scaling), xpos ----

rope_config fuzzed_rope_config(gen& g) {
  rope_config c;
  c.head_dim = g.small_int(2, 32);
  if (g.flag()) c.rotary_dim = g.small_int(0, 32);
  if (g.flag()) c.partial_rotary_factor = g.real(0, 1);
  c.partial_mode = g.flag() ? partial_rotary_mode::prefix : partial_rotary_mode::proportional;
  c.rotary_offset = g.flag() ? 0 : g.small_int(0, 16);
  c.theta = g.flag() ? 10000.0 : g.real(1.5, 1e7);
  c.layout = g.flag() ? kernels::pairing::half_split : kernels::pairing::interleaved;
  c.angles = g.flag() ? angle_mode::exact : angle_mode::reference_fp32;
  c.allow_compression = g.flag();
  auto factors = [&](int fallback) {
    const int pairs = (c.rotary_dim.value_or(c.head_dim) > 0 ? c.rotary_dim.value_or(c.head_dim) : fallback) / 2;
    std::vector<double> v(
        static_cast<std::size_t>(g.flag() && pairs > 0 && pairs <= 64 ? pairs : std::max<i64>(0, g.size(0, 8))));
    for (auto& x : v) x = g.real(0.01, 100);
    return v;
  };
  switch (g.in.ConsumeIntegralInRange(0, 8)) {
    case 0:
      c.scaling = default_scaling{};
      break;
    case 1:
      c.scaling = linear_scaling{g.real(0.5, 64)};
      break;
    case 2:
      c.scaling = ntk_scaling{g.real(0.5, 1000)};
      break;
    case 3:
      c.scaling = dynamic_ntk_scaling{
          g.real(0.5, 64), g.count(1, 8192),
          g.flag() ? dynamic_length_source::max_position_in_call : dynamic_length_source::fixed_max};
      break;
    case 4: {
      yarn_scaling y;
      y.factor = g.real(0.5, 64);
      y.original_max_position = g.count(1, 8192);
      y.beta_fast = g.real(0, 64);
      y.beta_slow = g.real(0, 4);
      if (g.flag()) y.attention_factor = g.real(0, 4);
      if (g.flag()) y.mscale = g.real(0, 2);
      if (g.flag()) y.mscale_all_dim = g.real(0, 2);
      y.truncate = g.flag();
      y.extrapolation_factor = g.real(0, 1);
      c.scaling = y;
      break;
    }
    case 5:
      c.scaling = llama3_scaling{g.real(0.5, 64), g.real(0, 8), g.real(0, 8), g.count(1, 8192)};
      break;
    case 6: {
      longrope_scaling l;
      l.short_factor = factors(c.head_dim);
      l.long_factor = g.flag() ? l.short_factor : factors(c.head_dim);
      l.original_max_position = g.count(1, 8192);
      if (g.flag()) l.factor = g.real(0.5, 64);
      l.max_position = g.count(0, 1 << 20);
      if (g.flag()) l.attention_factor = g.real(0, 4);
      l.switch_policy = g.in.PickValueInArray(
          {longrope_switch::per_call_max_position, longrope_switch::fixed_by_capacity, longrope_switch::always_long});
      l.capacity = g.count(0, 1 << 20);
      c.scaling = std::move(l);
      break;
    }
    case 7:
      c.scaling = frequency_factors{factors(c.head_dim), g.real(0, 4)};
      break;
    default:
      c.scaling = explicit_frequencies{factors(c.head_dim), g.real(0, 4)};
      break;
  }
  return c;
}

xpos_config fuzzed_xpos_config(gen& g) {
  xpos_config c;
  c.head_dim = g.small_int(2, 32);
  c.theta = g.flag() ? 10000.0 : g.real(1.5, 1e7);
  c.gamma = g.real(0, 2);
  c.scale_base = g.real(1, 4096);
  c.layout = g.flag() ? kernels::pairing::half_split : kernels::pairing::interleaved;
  c.center_policy = g.flag() ? xpos_center_policy::fixed : xpos_center_policy::midpoint_of_call;
  c.center = g.flag() ? 0 : g.position();
  return c;
}

/// True when xPos's factors zeta_k^(+-u) fit comfortably in float for every position (u = (n - c) /
/// scale_base): the documented overflow far from the centre is not a finding.
bool xpos_in_range(const xpos& e, std::span<const i64> pos) {
  const auto& c = e.config();
  const double centre = static_cast<double>(e.center_of(pos));
  double worst = 0;
  for (int k = 0; k < c.head_dim / 2; ++k) worst = std::max(worst, std::fabs(std::log(e.zeta(k))));
  for (i64 p : pos)
    if (!(std::fabs((static_cast<double>(p) - centre) / c.scale_base) * worst <= 60)) return false;
  return true;
}

template <class E, class T>
void run_qk(const E& e, gen& g, const char* what, bool check_finite_fn(const E&, std::span<const i64>)) {
  const auto d = static_cast<std::ptrdiff_t>(e.head_dim());
  if (d <= 0 || d > 4096) return;
  const std::ptrdiff_t b = g.in.ConsumeIntegralInRange(1, 2), t = g.in.ConsumeIntegralInRange(1, 3),
                       h = g.in.ConsumeIntegralInRange(1, 2);
  std::vector<T> x(static_cast<std::size_t>(b * t * h * d));
  for (auto& v : x) v = static_cast<T>(g.in.ConsumeFloatingPointInRange(-1.0f, 1.0f));
  const auto pos = g.positions(static_cast<std::size_t>(b * t));
  const auto view = tensor_view<T>::bthd(x.data(), b, t, h, d);
  if (g.flag())
    e.transform_q(view, pos);
  else
    e.transform_k(view, pos);
  if (check_finite_fn(e, pos))
    for (const auto& v : x) finite(what, static_cast<double>(static_cast<compute_t<T>>(v)));
}

template <class E>
bool always(const E&, std::span<const i64>) {
  return true;
}

template <class E>
void run_qk_all_types(const E& e, gen& g, const char* what,
                      bool check_finite_fn(const E&, std::span<const i64>) = always<E>) {
  switch (g.in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      run_qk<E, float>(e, g, what, check_finite_fn);
      break;
    case 1:
      run_qk<E, double>(e, g, what, check_finite_fn);
      break;
    case 2:
      if constexpr (std::is_same_v<E, rope>) run_qk<E, float16>(e, g, what, check_finite_fn);
      break;
    default:
      if constexpr (std::is_same_v<E, rope>) run_qk<E, bfloat16>(e, g, what, check_finite_fn);
      break;
  }
}

void fuzz_rope(gen& g) {
  const rope e(fuzzed_rope_config(g));
  for (double w : e.base_frequencies().inv_freq) finite("rope.inv_freq", w);
  finite("rope.attention_scaling", e.base_frequencies().attention_scaling);
  finite("rope.softmax_scale_multiplier", e.softmax_scale_multiplier());
  const auto f = e.at(g.position());
  for (double w : f.inv_freq) finite("rope.at.inv_freq", w);
  finite("rope.at.attention_scaling", f.attention_scaling);
  run_qk_all_types(e, g, "rope.transform");
}

void fuzz_xpos(gen& g) {
  const xpos e(fuzzed_xpos_config(g));
  for (double w : e.inv_freq()) finite("xpos.inv_freq", w);
  run_qk_all_types(e, g, "xpos.transform", xpos_in_range);
}

// ---- combined ----

void fuzz_combined(gen& g) {
  const rope r(fuzzed_rope_config(g));
  alibi_config ac;
  ac.num_heads = g.size(1, 16);
  ac.max_bias = g.real(0, 16);
  const auto both = combine(r, alibi(ac));
  run_qk_all_types(both, g, "combined.transform");
  run_bias(both, g, "combined.bias");
  finite("combined.softmax_scale_multiplier", both.softmax_scale_multiplier());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  gen g{in};
  try {
    switch (in.ConsumeIntegralInRange(0, 7)) {
      case 0:
        fuzz_sinusoidal(g);
        break;
      case 1:
        fuzz_learned(g);
        break;
      case 2:
        fuzz_shaw(g);
        break;
      case 3:
        fuzz_t5(g);
        break;
      case 4:
        fuzz_alibi(g);
        break;
      case 5:
        fuzz_rope(g);
        break;
      case 6:
        fuzz_xpos(g);
        break;
      default:
        fuzz_combined(g);
        break;
    }
  } catch (const config_error&) {
  }
  return 0;
}
