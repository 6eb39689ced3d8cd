// python/src/ops.hpp — the attention family of posenc instantiated for one bias type B: the fused
// attention (contiguous, ragged, paged; float, bfloat16, float16 or q8_0 K/V), its backward, the
// sdpa oracle and its backward (float or double), and the two KV caches. Included by the one
// translation unit of each bias (enc_*.cpp), which calls make_bias_ops<B>(b).
//
// The encoder each call sees is combined<dyn_transform, B> (for B = no_position, dyn_transform alone),
// the chain empty when the Python encoder has no q/k transform. The GIL is released for the call.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/paged.hpp>
#include <posenc/attention/paged_kv_cache.hpp>
#include <posenc/attention/ragged.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>

#include "binding.hpp"

namespace pyposenc {

struct kv_cache_holder {
  posenc::kv_cache<float> cache;
};
struct paged_cache_holder {
  posenc::paged_kv_cache cache;
};

namespace detail {

/// Calls f(k, v) with the K/V views of `a` in their storage type (k and v of one type).
template <class F>
void with_kv(const call_args& a, F&& f) {
  if (a.k.type != a.v.type && !(a.k.type == dtype::u8 && a.v.type == dtype::u8))
    throw py::type_error(std::string("k, v: expected one dtype for both, got ") + dtype_name(a.k.type) + " and " +
                         dtype_name(a.v.type));
  switch (a.k.type) {
    case dtype::f32:
      return f(view4<const float>(a.k), view4<const float>(a.v));
    case dtype::bf16:
      return f(view4<const bfloat16>(a.k), view4<const bfloat16>(a.v));
    case dtype::f16:
      return f(view4<const float16>(a.k), view4<const float16>(a.v));
    case dtype::u8:
      return f(view4<const block_q8_0>(a.k), view4<const block_q8_0>(a.v));
    default:
      require_dtype(a.k, {dtype::f32, dtype::bf16, dtype::f16, dtype::q8_0});
  }
}

/// DeBERTa's p2c term (hook 5) and CoPE's contextual positions (hook 6) belong to encoders: the paged
/// and ragged attention and the paged cache take no such encoder (a compile-time refusal there), so
/// those calls raise ConfigError instead.
template <class E>
inline constexpr bool serves_decoders = !posenc::relative_query_encoding<E> && !posenc::contextual_position_encoding<E>;
template <class E>
[[noreturn]] void refuse_relative_query(const char* call) {
  const char* what = posenc::relative_query_encoding<E> ? "with a position-to-content term (DeBERTa p2c)"
                                                        : "with contextual positions (CoPE)";
  throw posenc::config_error(
      "encoder", what,
      std::string("an encoder without it: ") + call + " serve decoders; call attention on the padded batch");
}

/// Whether the fused kernels compute every hook of an encoder (fused_attention_supports): the fused
/// calls and the caches raise ConfigError for one they do not (a compile-time refusal in C++).
template <class E>
inline constexpr bool fused = posenc::fused_attention_supports<E>;
[[noreturn]] inline void refuse_unfused(const char* call) {
  throw posenc::config_error(
      "encoder", "with a hook the fused kernels do not compute",
      std::string("an encoder the fused kernels compute for ") + call + ": use sdpa / sdpa_backward");
}

template <class E>
void run_attention_fused(const call_args& a, const E& e) {
  const auto q = view4<const float>(a.q);
  const auto out = view4<float>(a.out);
  auto fast = fast_options();
  fast.log_sum_exp = a.lse;
  fast.bf16_dot_products = a.bf16_dot_products;
  fast.q8_0_int8_dot_products = a.q8_0_int8_dot_products;
  with_kv(a, [&](auto k, auto v) {
    if (a.ragged) {
      if constexpr (serves_decoders<E>) {
        const posenc::ragged_batch rb{a.cu_q, a.cu_k};
        posenc::attention(q, k, v, out, rb, e, a.opts, fast);
      } else {
        refuse_relative_query<E>("ragged batches");
      }
    } else {
      posenc::attention(q, k, v, out, e, a.opts, fast);
    }
  });
}

template <class E>
void run_attention(const call_args& a, const E& e) {
  if constexpr (!fused<E>) {
    static_cast<void>(a), static_cast<void>(e);
    refuse_unfused("attention");
  } else {
    run_attention_fused(a, e);
  }
}

template <class E>
void run_paged_decoder(const call_args& a, const E& e) {
  const auto q = view4<const float>(a.q);
  const auto out = view4<float>(a.out);
  with_kv(a, [&](auto k, auto v) {
    using TK = std::remove_const_t<typename decltype(k)::element_type>;
    const posenc::paged_kv<TK> kv{.k_blocks = k,
                                  .v_blocks = v,
                                  .block_table = a.block_table,
                                  .blocks_per_sequence = a.blocks_per_sequence,
                                  .lengths = a.lengths};
    auto fast = fast_options();
    fast.bf16_dot_products = a.bf16_dot_products;
    fast.q8_0_int8_dot_products = a.q8_0_int8_dot_products;
    posenc::attention(q, kv, out, e, a.opts, fast);
  });
}

template <class E>
void run_paged(const call_args& a, const E& e) {
  if constexpr (!fused<E>) {
    static_cast<void>(a), static_cast<void>(e);
    refuse_unfused("paged attention calls");
  } else if constexpr (!serves_decoders<E>) {
    static_cast<void>(a), static_cast<void>(e);
    refuse_relative_query<E>("paged attention calls");
  } else {
    run_paged_decoder(a, e);
  }
}

template <class T, class E>
void run_sdpa(op o, const call_args& a, const E& e) {
  const auto q = view4<const T>(a.q), k = view4<const T>(a.k), v = view4<const T>(a.v);
  if (o == op::sdpa) {
    posenc::sdpa(q, k, v, view4<T>(a.out), e, a.opts);
    return;
  }
  posenc::sdpa_backward(q, k, v, view4<const T>(a.dout), view4<T>(a.dq), view4<T>(a.dk), view4<T>(a.dv), e, a.opts,
                        {.encoder = a.encoder_grad, .sinks = a.sinks_grad});
}

template <class E>
void run_fused_backward(const call_args& a, const E& e) {
  if constexpr (!fused<E>) {
    static_cast<void>(a), static_cast<void>(e);
    refuse_unfused("attention_backward");
  } else {
    posenc::attention_backward(view4<const float>(a.q), view4<const float>(a.k), view4<const float>(a.v),
                               view4<const float>(a.out), std::span<const float>(a.lse), view4<const float>(a.dout),
                               view4<float>(a.dq), view4<float>(a.dk), view4<float>(a.dv), e, a.opts,
                               {.encoder = a.encoder_grad, .sinks = a.sinks_grad}, fast_options());
  }
}

template <class E>
void run_op(op o, const call_args& a, const E& e) {
  switch (o) {
    case op::attention:
      return run_attention(a, e);
    case op::attention_paged:
      return run_paged(a, e);
    case op::attention_backward:
      return run_fused_backward(a, e);
    case op::sdpa:
    case op::sdpa_backward:
      if (a.q.type == dtype::f64) return run_sdpa<double>(o, a, e);
      return run_sdpa<float>(o, a, e);
  }
}

template <class E>
void run_cache_fused(cache_op o, posenc::kv_cache<float>& c, cache_args& a, const E& e) {
  switch (o) {
    case cache_op::append:
      a.event = static_cast<int>(c.append(e, view4<const float>(a.k), view4<const float>(a.v),
                                          std::span<const std::int64_t>(a.positions),
                                          std::span<const std::uint8_t>(a.token_mask)));
      return;
    case cache_op::attend:
      c.attend(e, view4<const float>(a.q), view4<float>(a.out), std::span<const std::int64_t>(a.positions), a.opts,
               fast_options());
      return;
    case cache_op::shift_window:
      c.shift_window(e, a.sink_tokens, a.evict);
      return;
  }
}

template <class E>
void run_cache(cache_op o, posenc::kv_cache<float>& c, cache_args& a, const E& e) {
  if constexpr (!fused<E>) {
    static_cast<void>(o), static_cast<void>(c), static_cast<void>(a), static_cast<void>(e);
    refuse_unfused("KV caches");
  } else {
    run_cache_fused(o, c, a, e);
  }
}

template <class E>
void run_paged_cache_decoder(cache_op o, posenc::paged_kv_cache& c, cache_args& a, const E& e) {
  switch (o) {
    case cache_op::append: {
      const auto k = view4<const float>(a.k), v = view4<const float>(a.v);
      c.append(e, a.sequence, k, v);
      return;
    }
    case cache_op::attend:
      c.attend(e, std::span<const std::ptrdiff_t>(a.sequences), view4<const float>(a.q), view4<float>(a.out), a.opts,
               fast_options());
      return;
    case cache_op::shift_window:
      c.shift_window(e, a.sequence, a.sink_tokens, a.evict);
      return;
  }
}

template <class E>
void run_paged_cache(cache_op o, posenc::paged_kv_cache& c, cache_args& a, const E& e) {
  if constexpr (!fused<E>) {
    static_cast<void>(o), static_cast<void>(c), static_cast<void>(a), static_cast<void>(e);
    refuse_unfused("paged KV caches");
  } else if constexpr (!serves_decoders<E>) {
    static_cast<void>(o), static_cast<void>(c), static_cast<void>(a), static_cast<void>(e);
    refuse_relative_query<E>("paged KV caches");
  } else {
    run_paged_cache_decoder(o, c, a, e);
  }
}

}  // namespace detail

/// The ops of bias type B (see the banner).
template <class B>
class bias_ops_impl final : public bias_ops {
 public:
  explicit bias_ops_impl(B b) : b_(std::move(b)) {}
  [[nodiscard]] std::string name() const override { return std::string(b_.name()); }
  [[nodiscard]] bool is_none() const override { return std::is_same_v<B, posenc::no_position>; }
  [[nodiscard]] std::ptrdiff_t parameter_count() const override {
    if constexpr (posenc::trainable_encoding<B>)
      return b_.parameter_count();
    else
      return 0;
  }
  [[nodiscard]] std::ptrdiff_t num_heads() const override {
    if constexpr (posenc::score_bias_encoding<B>)
      return b_.num_heads();
    else
      return 0;
  }
  [[nodiscard]] std::ptrdiff_t head_dim() const override {
    if constexpr (posenc::relative_kv_encoding<B> || posenc::contextual_position_encoding<B>)
      return b_.head_dim();
    else
      return 0;
  }
  [[nodiscard]] bool fused() const override { return detail::fused<B>; }
  [[nodiscard]] const B& value() const noexcept { return b_; }

  void run(op o, call_args& a, const dyn_transform* t) const override {
    py::gil_scoped_release nogil;
    with_encoder(t, a.q.shape[3], a.opts, [&](const auto& e) { detail::run_op(o, a, e); });
  }
  void run_cache(cache_op o, kv_cache_holder& c, cache_args& a, const dyn_transform* t) const override {
    py::gil_scoped_release nogil;
    with_encoder(t, c.cache.config().head_dim, a.opts, [&](const auto& e) { detail::run_cache(o, c.cache, a, e); });
  }
  void run_paged_cache(cache_op o, paged_cache_holder& c, cache_args& a, const dyn_transform* t) const override {
    py::gil_scoped_release nogil;
    with_encoder(t, c.cache.config().head_dim, a.opts,
                 [&](const auto& e) { detail::run_paged_cache(o, c.cache, a, e); });
  }
  void bias_matrix(std::span<const std::int64_t> qp, std::span<const std::int64_t> kp,
                   std::span<double> out) const override {
    if constexpr (posenc::score_bias_encoding<B>) {
      const std::size_t nq = qp.size(), nk = kp.size();
      for (std::ptrdiff_t h = 0; h < b_.num_heads(); ++h)
        for (std::size_t i = 0; i < nq; ++i)
          for (std::size_t j = 0; j < nk; ++j)
            out[(static_cast<std::size_t>(h) * nq + i) * nk + j] = b_.bias(h, qp[i], kp[j]);
    } else {
      bias_ops::bias_matrix(qp, kp, out);
    }
  }

 private:
  // One encoder type per bias, so each translation unit instantiates the attention family once:
  // combined<dyn_transform, B> (dyn_transform alone for no bias). Without transforms the chain is
  // empty and the transform flags are turned off, so the kernels copy and rotate nothing.
  template <class F>
  void with_encoder(const dyn_transform* t, std::ptrdiff_t head_dim, posenc::attention_options& o, F&& f) const {
    const dyn_transform identity(head_dim);
    if (!t) {
      t = &identity;
      o.transform_queries = o.transform_keys = false;
    }
    if constexpr (std::is_same_v<B, posenc::no_position>)
      f(*t);
    else
      f(posenc::combine(*t, b_));
  }
  B b_;
};

template <class B>
std::shared_ptr<const bias_ops_impl<B>> make_bias_ops(B b) {
  return std::make_shared<const bias_ops_impl<B>>(std::move(b));
}

}  // namespace pyposenc
