// cli/trainer/tiny_lm.hpp — a tiny decoder-only byte-level transformer, trained on the CPU with
// any posenc encoder plugged in through the hook concepts (posenc/concepts.hpp): token embedding
// (+ the additive hook), pre-LayerNorm blocks of causal multi-head attention and a GELU MLP, a final
// LayerNorm, an untied output layer; cross-entropy on the next byte; Adam with warm-up, cosine decay
// and gradient clipping. Every random choice comes from one seed, so a run is reproducible bit for
// bit on one machine.
//
// The attention is posenc's own: posenc::attention forward (the encoder's q/k transform and score
// bias inside the tiles, the rows' log-sum-exp kept) and posenc::attention_backward, which maps dq,
// dk back through the transform and hands out the gradients of a trainable score bias (T5's table,
// FIRE's MLP, KERPLE's kernel parameters); the learned table's gradient comes from the encoder too
// (accumulate_add_gradient). An encoder whose hooks the fused path does not all compute
// (posenc::fused_attention_supports is false) runs in posenc::sdpa and sdpa_backward instead,
// chosen at compile time; every encoder of the lab, CoPE's contextual positions included, takes the
// fused path. DeBERTa (He et al. 2021, as DeBERTa-v3 in
// transformers' deberta_v2): one table of relative embeddings per model, LayerNorm-ed
// (norm_rel_ebd), projected by each layer's own W_q and W_k (share_att_key) into that layer's Q_r
// and K_r, so the tables' gradients flow into the embeddings and the projections. CoPE (Golovneva
// et al. 2024, facebookresearch/RAM projects/cope): a position-embedding table per layer, shared by
// the heads, zero at initialisation, as the authors' ContextPosSelfAttn. Each model runs its
// attention on its own thread (the lab trains several side by side). Eigen does the projections,
// the MLP and the LayerNorms. Not here: Shaw's relative k/v hook (a static_assert says so), mixed
// precision.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/encoders/cope.hpp>
#include <posenc/encoders/deberta.hpp>
#include <posenc/encoders/fire.hpp>
#include <posenc/encoders/kerple.hpp>
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/t5.hpp>

namespace tiny {

using mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using row = Eigen::RowVectorXf;

/// Sizes and optimiser settings.
struct lm_config {
  int vocab = 256;
  int d_model = 64;
  int heads = 4;
  int layers = 2;
  int d_ff = 256;
  float lr = 3e-3f;   ///< peak learning rate
  int warmup = 50;    ///< linear warm-up steps
  int steps = 1000;   ///< total steps (cosine decay to lr / 10)
  float clip = 1.0f;  ///< global gradient-norm clip
  std::uint64_t seed = 1;
};

/// splitmix64: a small, portable generator (std::normal_distribution differs between libraries).
struct rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal() {  // Box-Muller
    const double u = std::max(uniform(), 1e-300), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

namespace detail {

inline void fill_normal(mat& m, rng& g, double std) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(g.normal() * std);
}

/// LayerNorm over each row: y = g * (x - mean) * rstd + b; keeps x_hat and rstd for the backward.
struct layer_norm_cache {
  mat xhat;
  Eigen::VectorXf rstd;
};
inline mat layer_norm(const mat& x, const row& g, const row& b, layer_norm_cache& c) {
  const Eigen::Index n = x.rows(), d = x.cols();
  c.xhat.resize(n, d);
  c.rstd.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const float mean = x.row(i).mean();
    const float var = (x.row(i).array() - mean).square().mean();
    c.rstd(i) = 1.0f / std::sqrt(var + 1e-5f);
    c.xhat.row(i) = (x.row(i).array() - mean) * c.rstd(i);
  }
  return (c.xhat.array().rowwise() * g.array()).rowwise() + b.array();
}
inline mat layer_norm_backward(const mat& dy, const row& g, const layer_norm_cache& c, row& dg, row& db) {
  dg += (dy.array() * c.xhat.array()).colwise().sum().matrix();
  db += dy.colwise().sum();
  const mat dxh = dy.array().rowwise() * g.array();
  mat dx(dy.rows(), dy.cols());
  const auto d = static_cast<float>(dy.cols());
  for (Eigen::Index i = 0; i < dy.rows(); ++i) {
    const float m1 = dxh.row(i).sum() / d, m2 = dxh.row(i).dot(c.xhat.row(i)) / d;
    dx.row(i) = c.rstd(i) * (dxh.row(i).array() - m1 - c.xhat.row(i).array() * m2);
  }
  return dx;
}

inline float gelu(float u) {  // tanh form (GPT-2)
  return 0.5f * u * (1.0f + std::tanh(0.7978845608f * (u + 0.044715f * u * u * u)));
}
inline float gelu_grad(float u) {
  const float a = 0.7978845608f * (u + 0.044715f * u * u * u), t = std::tanh(a);
  return 0.5f * (1.0f + t) + 0.5f * u * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * u * u);
}

}  // namespace detail

/// Every trainable tensor (also used for gradients and Adam moments).
struct lm_params {
  struct block {
    row ln1_g, ln1_b, ln2_g, ln2_b, b1, b2;
    mat wq, wk, wv, wo, w1, w2;
    mat enc;  ///< the layer's own encoder parameters: CoPE's position embeddings [npos, head_dim]
  };
  mat tok;           ///< [vocab, d]
  mat pos;           ///< [max_len, d]: the learned absolute table; DeBERTa's relative embeddings [2 span, d]
  row pos_g, pos_b;  ///< DeBERTa: the LayerNorm of the relative embeddings
  mat bias;  ///< a trainable score bias's parameters: T5's table [num_buckets, heads]; FIRE's, KERPLE's [1, count]
  std::vector<block> blocks;
  row lnf_g, lnf_b;
  mat out;  ///< [d, vocab]

  /// f(tensor data, size) over every tensor, in a fixed order.
  template <class F>
  void each(F&& f) {
    auto m = [&](auto& t) { f(t.data(), static_cast<std::size_t>(t.size())); };
    m(tok), m(pos), m(bias);
    for (auto& b : blocks) {
      m(b.ln1_g), m(b.ln1_b), m(b.ln2_g), m(b.ln2_b), m(b.b1), m(b.b2);
      m(b.wq), m(b.wk), m(b.wv), m(b.wo), m(b.w1), m(b.w2), m(b.enc);
    }
    m(lnf_g), m(lnf_b), m(out), m(pos_g), m(pos_b);
  }
  /// The same shapes, all zero.
  [[nodiscard]] lm_params zeros_like() const {
    lm_params z = *this;
    z.each([](float* p, std::size_t n) { std::fill(p, p + n, 0.0f); });
    return z;
  }
};

/// The model around encoder E. E's hooks decide what the positions do; learned_absolute, the
/// trainable score biases (t5_bias, fire, kerple), DeBERTa's and CoPE's tables are trained (their
/// tables are parameters; the encoder is rebuilt from them before each use, KERPLE's projected as
/// its authors do). For DeBERTa and CoPE, `enc` gives the configuration; its tables are replaced.
template <posenc::positional_encoding E>
class tiny_lm {
  static constexpr bool learned = std::same_as<E, posenc::learned_absolute>;
  static constexpr bool t5 = std::same_as<E, posenc::t5_bias>;
  static constexpr bool deberta = std::same_as<E, posenc::deberta_relative>;
  static constexpr bool cope = std::same_as<E, posenc::cope>;
  static constexpr bool per_layer = deberta || cope;  // each layer has its own encoder (tables)
  /// The fused attention where it computes every hook of E, else the sdpa oracle (double inside).
  static constexpr bool fused = posenc::fused_attention_supports<E>;
  static_assert(!posenc::relative_kv_encoding<E> || deberta,
                "tiny_lm: Shaw's relative k/v hook is not implemented here");
  static constexpr bool trained_bias = posenc::score_bias_encoding<E> && posenc::trainable_encoding<E>;
  static_assert(!trained_bias || t5 || std::same_as<E, posenc::fire> || std::same_as<E, posenc::kerple>,
                "tiny_lm: sync_encoder rebuilds t5_bias, fire and kerple from their parameters");

 public:
  tiny_lm(const lm_config& c, E enc) : c_(c), enc_(std::move(enc)), g_{c.seed}, data_{c.seed ^ 0xDA7A5EEDull} {
    const int d = c.d_model;
    if (d % c.heads != 0) throw std::invalid_argument("tiny_lm: d_model must be a multiple of heads");
    hd_ = d / c.heads;
    if constexpr (posenc::additive_encoding<E>)
      if (enc_.model_dim() != d) throw std::invalid_argument("tiny_lm: the additive encoder's model_dim != d_model");
    if constexpr (posenc::qk_transform_encoding<E>)
      if (enc_.head_dim() != hd_) throw std::invalid_argument("tiny_lm: the encoder's head_dim != d_model / heads");
    if constexpr (posenc::score_bias_encoding<E>)
      if (enc_.num_heads() != c.heads) throw std::invalid_argument("tiny_lm: the bias encoder's num_heads != heads");
    if constexpr (deberta)
      if (enc_.num_heads() != c.heads || enc_.head_dim() != hd_ || !enc_.config().c2p || !enc_.config().p2c)
        throw std::invalid_argument(
            "tiny_lm: DeBERTa needs num_heads = heads, head_dim = d_model / heads, c2p and p2c");
    if constexpr (cope)
      if (enc_.head_dim() != hd_) throw std::invalid_argument("tiny_lm: CoPE's head_dim != d_model / heads");
    init_params();
    m_ = p_.zeros_like(), v_ = p_.zeros_like();
    sync_encoder();
  }

  [[nodiscard]] const E& encoder() const noexcept { return enc_; }
  [[nodiscard]] const lm_params& params() const noexcept { return p_; }
  /// Mutable parameters (every call reads the trained tables from here: the encoder is rebuilt).
  [[nodiscard]] lm_params& params() noexcept { return p_; }
  [[nodiscard]] int steps_done() const noexcept { return t_; }

  /// Mean cross-entropy (nats per byte) of predicting seq[1..S] from seq[0..S-1], positions 0..S-1.
  /// With `grad`, the gradients of that mean are ADDED to *grad (scaled by `weight`).
  double loss(std::span<const std::uint8_t> seq, lm_params* grad = nullptr, float weight = 1.0f) {
    const auto S = static_cast<Eigen::Index>(seq.size()) - 1;
    if (S < 1) throw std::invalid_argument("tiny_lm::loss: a sequence needs at least 2 bytes");
    std::vector<layer_cache> lc(p_.blocks.size());
    detail::layer_norm_cache fc;
    const mat hf = detail::layer_norm(forward(seq, lc), p_.lnf_g, p_.lnf_b, fc);
    mat probs = hf * p_.out;  // [S, vocab] logits, then probabilities
    const double total = cross_entropy(probs, seq, 0);
    if (grad) backward(seq, probs, hf, fc, lc, *grad, weight / static_cast<float>(S));
    return total / static_cast<double>(S);
  }

  /// Mean cross-entropy (nats per byte) of the last `count` predictions of seq (count <= seq.size()
  /// - 1): the same forward, the output layer on those rows only (a sliding-window evaluation).
  double tail_loss(std::span<const std::uint8_t> seq, int count) {
    const auto S = static_cast<Eigen::Index>(seq.size()) - 1;
    if (count < 1 || count > S) throw std::invalid_argument("tiny_lm::tail_loss: 1 <= count <= seq.size() - 1");
    std::vector<layer_cache> lc(p_.blocks.size());
    const mat x = forward(seq, lc).bottomRows(count);
    detail::layer_norm_cache fc;
    mat probs = detail::layer_norm(x, p_.lnf_g, p_.lnf_b, fc) * p_.out;
    return cross_entropy(probs, seq, S - count) / count;
  }

  /// One optimiser step on `batch` sequences of S + 1 bytes drawn from `data` (offsets from the
  /// model's data generator: the same batches for every encoder). Returns the batch's mean loss
  /// (nats per byte).
  double train_step(std::span<const std::uint8_t> data, int batch, int S) {
    if (data.size() < static_cast<std::size_t>(S) + 2) throw std::invalid_argument("tiny_lm: corpus too short");
    lm_params grad = p_.zeros_like();
    double l = 0;
    for (int b = 0; b < batch; ++b) {
      const auto off = static_cast<std::size_t>(data_.below(data.size() - static_cast<std::size_t>(S) - 1));
      l += loss(data.subspan(off, static_cast<std::size_t>(S) + 1), &grad, 1.0f / static_cast<float>(batch));
    }
    adam(grad);
    return l / batch;
  }

  /// Replaces the encoder (evaluation with another scaling, e.g. RoPE + PI / YaRN). Same hooks.
  void set_encoder(E e) { enc_ = std::move(e); }

 private:
  struct layer_cache {
    mat x_in, h1, q, k, v, o, x_mid, h2, u, gu;  // q, k as projected: the attention transforms them itself
    std::vector<float> lse;                      // the attention's log-sum-exp per (head, query) row
    detail::layer_norm_cache ln1, ln2;
  };

  // The residual stream after the last block, [S, d], for inputs seq[0..S-1] at positions 0..S-1.
  mat forward(std::span<const std::uint8_t> seq, std::vector<layer_cache>& lc) {
    const auto S = static_cast<Eigen::Index>(seq.size()) - 1;
    sync_encoder();
    mat x(S, c_.d_model);
    for (Eigen::Index t = 0; t < S; ++t) {
      x.row(t) = p_.tok.row(seq[static_cast<std::size_t>(t)]);
      if constexpr (posenc::additive_encoding<E>) enc_.add(t, std::span<float>(x.row(t).data(), x.cols()));
    }
    for (std::size_t l = 0; l < p_.blocks.size(); ++l) x = block_forward(l, x, lc[l]);
    return x;
  }

  // Logits [n, vocab] of the predictions of seq[first + 1 ..] -> probabilities (in place); returns
  // the summed cross-entropy (nats).
  static double cross_entropy(mat& probs, std::span<const std::uint8_t> seq, Eigen::Index first) {
    double total = 0;
    for (Eigen::Index t = 0; t < probs.rows(); ++t) {
      const float mx = probs.row(t).maxCoeff();
      probs.row(t) = (probs.row(t).array() - mx).exp();
      probs.row(t) /= probs.row(t).sum();
      const auto next = seq[static_cast<std::size_t>(first + t + 1)];
      total -= std::log(std::max(static_cast<double>(probs(t, next)), 1e-30));
    }
    return total;
  }

  // The encoder of layer l (DeBERTa's and CoPE's tables are per layer).
  [[nodiscard]] const E& layer_encoder(std::size_t l) const {
    if constexpr (per_layer)
      return layer_enc_[l];
    else
      return (static_cast<void>(l), enc_);
  }

  void init_params() {
    const int d = c_.d_model;
    auto& p = p_;
    p.tok.resize(c_.vocab, d);
    detail::fill_normal(p.tok, g_, 1.0);
    rng tables{c_.seed ^ 0x7AB1E5ull};  // its own stream: the other weights are the same for every encoder
    if constexpr (learned) {
      p.pos.resize(enc_.max_len(), d);
      detail::fill_normal(p.pos, tables, 0.1);
    }
    if constexpr (deberta) {  // transformers' init: nn.Embedding weights N(0, 0.02); LayerNorm 1, 0
      p.pos.resize(enc_.config().table_rows(), d);
      detail::fill_normal(p.pos, tables, 0.02);
      p.pos_g = row::Ones(d), p.pos_b = row::Zero(d);
    }
    if constexpr (t5) {
      p.bias.resize(enc_.config().num_buckets, c_.heads);
      detail::fill_normal(p.bias, tables, 0.1);
    } else if constexpr (trained_bias) {  // FIRE, KERPLE: the values the encoder was given
      const auto v = enc_.parameters();
      p.bias.resize(1, static_cast<Eigen::Index>(v.size()));
      for (std::size_t i = 0; i < v.size(); ++i) p.bias.data()[i] = static_cast<float>(v[i]);
    }
    const double s = 0.02, so = 0.02 / std::sqrt(2.0 * c_.layers);
    for (int l = 0; l < c_.layers; ++l) {
      lm_params::block b;
      b.ln1_g = row::Ones(d), b.ln1_b = row::Zero(d), b.ln2_g = row::Ones(d), b.ln2_b = row::Zero(d);
      b.b1 = row::Zero(c_.d_ff), b.b2 = row::Zero(d);
      for (mat* m : {&b.wq, &b.wk, &b.wv}) m->resize(d, d), detail::fill_normal(*m, g_, s);
      b.wo.resize(d, d), detail::fill_normal(b.wo, g_, so);
      b.w1.resize(d, c_.d_ff), detail::fill_normal(b.w1, g_, s);
      b.w2.resize(c_.d_ff, d), detail::fill_normal(b.w2, g_, so);
      if constexpr (cope) b.enc = mat::Zero(enc_.config().npos, hd_);  // the authors' torch.zeros
      p.blocks.push_back(std::move(b));
    }
    p.lnf_g = row::Ones(d), p.lnf_b = row::Zero(d);
    p.out.resize(d, c_.vocab);
    detail::fill_normal(p.out, g_, s);
  }

  // The backward of loss() from the output probabilities down to the embeddings; `scale` is the
  // weight of this sequence's mean (weight / S).
  void backward(std::span<const std::uint8_t> seq, const mat& probs, const mat& hf, const detail::layer_norm_cache& fc,
                const std::vector<layer_cache>& lc, lm_params& grad, float scale) {
    const Eigen::Index S = probs.rows();
    mat dlog = probs;
    for (Eigen::Index t = 0; t < S; ++t) dlog(t, seq[static_cast<std::size_t>(t + 1)]) -= 1.0f;
    dlog *= scale;
    grad.out.noalias() += hf.transpose() * dlog;
    mat dx = detail::layer_norm_backward(dlog * p_.out.transpose(), p_.lnf_g, fc, grad.lnf_g, grad.lnf_b);
    if constexpr (deberta) drel_ = mat::Zero(rel_.rows(), rel_.cols());
    for (std::size_t l = p_.blocks.size(); l-- > 0;) dx = block_backward(l, grad.blocks[l], lc[l], dx, grad);
    if constexpr (deberta) grad.pos += detail::layer_norm_backward(drel_, p_.pos_g, rel_ln_, grad.pos_g, grad.pos_b);
    std::vector<double> dpos;
    if constexpr (learned) dpos.assign(static_cast<std::size_t>(enc_.parameter_count()), 0.0);
    for (Eigen::Index t = 0; t < S; ++t) {
      grad.tok.row(seq[static_cast<std::size_t>(t)]) += dx.row(t);
      if constexpr (learned) enc_.accumulate_add_gradient(t, std::span<const float>(dx.row(t).data(), dx.cols()), dpos);
    }
    for (std::size_t i = 0; i < dpos.size(); ++i) grad.pos.data()[i] += static_cast<float>(dpos[i]);
  }

  // [1, S, heads, head_dim] views of an [S, d_model] row-major matrix (head h in columns h hd ..).
  [[nodiscard]] posenc::tensor_view<float> heads(mat& m) const {
    return posenc::tensor_view<float>::bthd(m.data(), 1, m.rows(), c_.heads, hd_);
  }
  [[nodiscard]] posenc::tensor_view<const float> heads(const mat& m) const {
    return posenc::tensor_view<const float>::bthd(m.data(), 1, m.rows(), c_.heads, hd_);
  }
  // The attention's execution: this thread only (models train side by side), scratch kept across calls.
  [[nodiscard]] posenc::fast_attention_options fast(std::span<float> lse = {}) {
    static const posenc::parallel_for here = [](std::ptrdiff_t n, posenc::task_ref t) {
      for (std::ptrdiff_t i = 0; i < n; ++i) t(i);
    };
    return {.executor = here, .workspace = ws_.get(), .log_sum_exp = lse};
  }

  mat block_forward(std::size_t l, const mat& x, layer_cache& c) {
    const lm_params::block& b = p_.blocks[l];
    const Eigen::Index S = x.rows();
    c.x_in = x;
    c.h1 = detail::layer_norm(x, b.ln1_g, b.ln1_b, c.ln1);
    c.q = c.h1 * b.wq, c.k = c.h1 * b.wk, c.v = c.h1 * b.wv;
    c.o.resize(S, c_.d_model);
    c.lse.resize(static_cast<std::size_t>(S * c_.heads));
    if constexpr (fused)
      posenc::attention(heads(c.q), heads(c.k), heads(c.v), heads(c.o), layer_encoder(l), {.causal = true},
                        fast(c.lse));
    else
      posenc::sdpa(heads(c.q), heads(c.k), heads(c.v), heads(c.o), layer_encoder(l), {.causal = true});
    c.x_mid = x + c.o * b.wo;
    c.h2 = detail::layer_norm(c.x_mid, b.ln2_g, b.ln2_b, c.ln2);
    c.u = (c.h2 * b.w1).rowwise() + b.b1;
    c.gu = c.u.unaryExpr([](float u) { return detail::gelu(u); });
    return c.x_mid + ((c.gu * b.w2).rowwise() + b.b2);
  }

  mat block_backward(std::size_t l, lm_params::block& gb, const layer_cache& c, const mat& dy, lm_params& grad) {
    const lm_params::block& b = p_.blocks[l];
    const E& enc = layer_encoder(l);
    const Eigen::Index S = dy.rows();
    // MLP
    gb.w2.noalias() += c.gu.transpose() * dy;
    gb.b2 += dy.colwise().sum();
    mat du = (dy * b.w2.transpose()).array() * c.u.unaryExpr([](float u) { return detail::gelu_grad(u); }).array();
    gb.w1.noalias() += c.h2.transpose() * du;
    gb.b1 += du.colwise().sum();
    mat dxm = dy + detail::layer_norm_backward(du * b.w1.transpose(), b.ln2_g, c.ln2, gb.ln2_g, gb.ln2_b);
    // attention: dq, dk w.r.t. the projections (through the encoder's transform), the bias parameters' gradient
    gb.wo.noalias() += c.o.transpose() * dxm;
    const mat dout = dxm * b.wo.transpose();
    mat dq(S, c_.d_model), dk(S, c_.d_model), dv(S, c_.d_model);
    std::vector<double> dtable;
    if constexpr (trained_bias || per_layer) dtable.assign(static_cast<std::size_t>(enc.parameter_count()), 0.0);
    if constexpr (fused)
      posenc::attention_backward(heads(c.q), heads(c.k), heads(c.v), heads(c.o), c.lse, heads(dout), heads(dq),
                                 heads(dk), heads(dv), enc, {.causal = true}, {.encoder = dtable}, fast());
    else
      posenc::sdpa_backward(heads(c.q), heads(c.k), heads(c.v), heads(dout), heads(dq), heads(dk), heads(dv), enc,
                            {.causal = true}, {.encoder = dtable});
    if constexpr (trained_bias)
      for (std::size_t i = 0; i < dtable.size(); ++i) grad.bias.data()[i] += static_cast<float>(dtable[i]);
    if constexpr (cope)
      for (std::size_t i = 0; i < dtable.size(); ++i) gb.enc.data()[i] += static_cast<float>(dtable[i]);
    if constexpr (deberta) {  // K_r = LN(R) W_k, Q_r = LN(R) W_q: into W_k, W_q and the embeddings
      const mat dkr = table_matrix(dtable, 0), dqr = table_matrix(dtable, 1);
      gb.wk.noalias() += rel_.transpose() * dkr;
      gb.wq.noalias() += rel_.transpose() * dqr;
      drel_.noalias() += dkr * b.wk.transpose() + dqr * b.wq.transpose();
    }
    gb.wq.noalias() += c.h1.transpose() * dq;
    gb.wk.noalias() += c.h1.transpose() * dk;
    gb.wv.noalias() += c.h1.transpose() * dv;
    const mat dh1 = dq * b.wq.transpose() + dk * b.wk.transpose() + dv * b.wv.transpose();
    return dxm + detail::layer_norm_backward(dh1, b.ln1_g, c.ln1, gb.ln1_g, gb.ln1_b);
  }

  void adam(lm_params& grad) {
    ++t_;
    double norm2 = 0;
    grad.each([&](float* g, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) norm2 += static_cast<double>(g[i]) * g[i];
    });
    const double clip = std::min(1.0, c_.clip / (std::sqrt(norm2) + 1e-12));
    const double progress = std::min(1.0, static_cast<double>(t_) / std::max(1, c_.steps));
    const double warm = std::min(1.0, static_cast<double>(t_) / std::max(1, c_.warmup));
    const double lr = c_.lr * warm * (0.1 + 0.9 * 0.5 * (1 + std::cos(3.141592653589793 * progress)));
    const double b1 = 0.9, b2 = 0.99, c1 = 1 - std::pow(b1, t_), c2 = 1 - std::pow(b2, t_);
    std::vector<float*> gs, ms, vs, ps;
    std::vector<std::size_t> ns;
    grad.each([&](float* p, std::size_t n) { gs.push_back(p), ns.push_back(n); });
    m_.each([&](float* p, std::size_t) { ms.push_back(p); });
    v_.each([&](float* p, std::size_t) { vs.push_back(p); });
    p_.each([&](float* p, std::size_t) { ps.push_back(p); });
    for (std::size_t k = 0; k < gs.size(); ++k)
      for (std::size_t i = 0; i < ns[k]; ++i) {
        const double g = gs[k][i] * clip;
        ms[k][i] = static_cast<float>(b1 * ms[k][i] + (1 - b1) * g);
        vs[k][i] = static_cast<float>(b2 * vs[k][i] + (1 - b2) * g * g);
        ps[k][i] -= static_cast<float>(lr * (ms[k][i] / c1) / (std::sqrt(vs[k][i] / c2) + 1e-8));
      }
  }

  // Table `which` (0: K_r, 1: Q_r) of a DeBERTa gradient, as [2 span, d] floats.
  [[nodiscard]] mat table_matrix(const std::vector<double>& g, Eigen::Index which) const {
    using dmat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    return Eigen::Map<const dmat>(g.data() + which * rel_.size(), rel_.rows(), rel_.cols()).template cast<float>();
  }

  // The trained tables go into the encoder (its tables are immutable values), before every use.
  void sync_encoder() {
    if constexpr (deberta) {  // LN(R) projected by each layer's W_k (c2p) and W_q (p2c)
      rel_ = detail::layer_norm(p_.pos, p_.pos_g, p_.pos_b, rel_ln_);
      layer_enc_.clear();
      for (const auto& b : p_.blocks) {
        const mat kr = rel_ * b.wk, qr = rel_ * b.wq;
        layer_enc_.emplace_back(enc_.config(), std::span<const float>(kr.data(), static_cast<std::size_t>(kr.size())),
                                std::span<const float>(qr.data(), static_cast<std::size_t>(qr.size())));
      }
    }
    if constexpr (cope) {
      layer_enc_.clear();
      for (const auto& b : p_.blocks)
        layer_enc_.emplace_back(enc_.config(),
                                std::span<const float>(b.enc.data(), static_cast<std::size_t>(b.enc.size())));
    }
    if constexpr (learned)
      enc_ = posenc::learned_absolute(enc_.config(),
                                      std::span<const float>(p_.pos.data(), static_cast<std::size_t>(p_.pos.size())));
    if constexpr (t5)
      enc_ = posenc::t5_bias(enc_.config(),
                             std::span<const float>(p_.bias.data(), static_cast<std::size_t>(p_.bias.size())));
    if constexpr (std::same_as<E, posenc::fire> || std::same_as<E, posenc::kerple>) {
      const std::vector<double> v(p_.bias.data(), p_.bias.data() + p_.bias.size());
      if constexpr (std::same_as<E, posenc::fire>) {
        enc_ = posenc::fire(enc_.config(), std::span<const double>(v));
      } else {  // the authors clamp the parameters themselves at every forward: the projection is kept
        const auto H = static_cast<std::size_t>(enc_.num_heads());
        enc_ =
            posenc::kerple(enc_.config(), std::span<const double>(v).first(H), std::span<const double>(v).subspan(H));
        const auto used = enc_.parameters();
        for (std::size_t i = 0; i < used.size(); ++i) p_.bias.data()[i] = static_cast<float>(used[i]);
      }
    }
  }

  lm_config c_;
  E enc_;
  rng g_, data_;
  int hd_ = 0, t_ = 0;
  lm_params p_, m_, v_;
  std::vector<E> layer_enc_;         // per_layer: layer l's encoder
  mat rel_, drel_;                   // DeBERTa: LN(R) and the gradient of the loss w.r.t. it
  detail::layer_norm_cache rel_ln_;  // DeBERTa: the LayerNorm of R
  std::unique_ptr<posenc::attention_workspace> ws_ = std::make_unique<posenc::attention_workspace>();
};

}  // namespace tiny
