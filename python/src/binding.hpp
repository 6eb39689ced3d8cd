// python/src/binding.hpp — what the translation units of posenc's Python module share: arrays from
// Python (numpy through the buffer protocol, torch through DLPack) as posenc tensor views, the
// encoder object every Python encoder is, and the type-erased operations a bias encoder carries.
//
// Design. posenc's attention is a template over the encoder type; a Python encoder is a value known
// only at run time. An encoder from Python is (a chain of q/k transforms, one bias). The chain is one
// C++ type, dyn_transform (virtual calls once per view, never per element), and each bias type B
// (none, ALiBi, T5, Shaw, ...) carries an ops object that instantiates the attention family for B
// and combined<dyn_transform, B> in its own translation unit (enc_*.cpp). Adding an encoder is one
// file: its Python class, and, for a bias, `make_bias_ops<B>()` from ops.hpp.
// Arrays are never copied on the way in: views carry the caller's strides; a copy happens only where
// posenc's C++ call makes one (the attention packs q and k tiles) or where this file says so
// (positions, masks and segment ids are copied as int64/int32/uint8 vectors: O(batch x tokens)).
#pragma once

// clang-format off
// Python.h (through pybind11) before any standard header, as the CPython API requires.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
// clang-format on

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/rope/frequencies.hpp>
#include <posenc/rope/rope.hpp>

namespace pyposenc {

namespace py = pybind11;
using posenc::bfloat16;
using posenc::block_q8_0;
using posenc::float16;
using posenc::tensor_view;

/// Element types an array from Python can hold (q8_0: uint8 with a trailing axis of 34 bytes).
enum class dtype : unsigned char { f32, f64, bf16, f16, i64, i32, u8, bool_, q8_0, other };
const char* dtype_name(dtype t) noexcept;

/// An array borrowed from Python: pointer, extents, strides in elements, and what keeps it alive.
struct array_ref {
  void* data = nullptr;
  dtype type = dtype::other;
  int ndim = 0;
  std::array<std::ptrdiff_t, 8> shape{}, strides{};
  bool writable = true;
  std::string name;          // the argument's name, for errors
  std::shared_ptr<void> dl;  // the DLPack tensor taken from a capsule (its deleter runs on release)
  py::object owner;          // the Python object (kept alive while the view is used)
  [[nodiscard]] bool given() const noexcept { return owner && !owner.is_none(); }
  [[nodiscard]] std::ptrdiff_t size() const noexcept {
    std::ptrdiff_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[static_cast<std::size_t>(i)];
    return n;
  }
  [[nodiscard]] std::string shape_text() const;
};

/// `obj` as an array: a numpy array (buffer protocol) or an object with __dlpack__ on the CPU
/// (torch tensors; a tensor that requires grad is detached first, which copies nothing). None gives
/// an array_ref with given() false. TypeError for anything else; ValueError for a non-CPU device or
/// a tensor whose storage is gone, naming `name`.
array_ref get_array(py::handle obj, const char* name);

/// TypeError unless `a` holds one of `allowed`; names the argument.
void require_dtype(const array_ref& a, std::initializer_list<dtype> allowed);
/// ValueError unless a.ndim == n.
void require_ndim(const array_ref& a, int n, const char* layout);
/// ValueError unless the array is C-contiguous.
void require_contiguous(const array_ref& a);
/// ValueError unless the array is writable.
void require_writable(const array_ref& a);

/// A [B, S, H, D] view of a 4-d array of element type T (q8_0: a 5-d uint8 array [B, S, H, D/32, 34]
/// whose block axis is contiguous).
template <class T>
tensor_view<T> view4(const array_ref& a);

/// A 1-d array as a contiguous span of T (ValueError naming the argument when it is strided).
template <class T>
std::span<T> span1(const array_ref& a);

/// A copy of a float array (float32/64, bfloat16, float16; any strides and shape) as doubles, row-major.
std::vector<double> to_doubles(const array_ref& a);

/// A copy of an integer array (any int dtype, any strides, any shape) as a flat vector.
std::vector<std::int64_t> int_vector(py::handle obj, const char* name);

// ---- q/k transforms -------------------------------------------------------------------------------

/// One q/k transform behind a virtual call per view (RoPE, mRoPE, xPos, temperature, ...).
struct transform_base {
  virtual ~transform_base() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::ptrdiff_t head_dim() const = 0;
  [[nodiscard]] virtual double softmax_scale_multiplier() const { return 1.0; }
  virtual void apply(tensor_view<float> x, std::span<const std::int64_t> p, bool query, bool backward) const = 0;
  virtual void apply(tensor_view<double> x, std::span<const std::int64_t> p, bool query, bool backward) const = 0;
  virtual void apply(tensor_view<bfloat16> x, std::span<const std::int64_t> p, bool query, bool backward) const = 0;
  virtual void apply(tensor_view<float16> x, std::span<const std::int64_t> p, bool query, bool backward) const = 0;
  /// The RoPE inside, when this transform is a plain RoPE (the KV caches steer its schedule).
  [[nodiscard]] virtual const posenc::rope* as_rope() const { return nullptr; }
};

/// transform_base for an encoder type T that models qk_transform_backward_encoding.
template <class T>
struct transform_impl final : transform_base {
  T t;
  explicit transform_impl(T x) : t(std::move(x)) {}
  [[nodiscard]] std::string name() const override { return std::string(t.name()); }
  [[nodiscard]] std::ptrdiff_t head_dim() const override { return t.head_dim(); }
  [[nodiscard]] double softmax_scale_multiplier() const override {
    if constexpr (posenc::has_softmax_scale_multiplier<T>)
      return t.softmax_scale_multiplier();
    else
      return 1.0;
  }
  template <class X>
  void go(tensor_view<X> x, std::span<const std::int64_t> p, bool query, bool backward) const {
    if (backward)
      query ? t.transform_q_backward(x, p) : t.transform_k_backward(x, p);
    else
      query ? t.transform_q(x, p) : t.transform_k(x, p);
  }
  void apply(tensor_view<float> x, std::span<const std::int64_t> p, bool q, bool b) const override { go(x, p, q, b); }
  void apply(tensor_view<double> x, std::span<const std::int64_t> p, bool q, bool b) const override { go(x, p, q, b); }
  void apply(tensor_view<bfloat16> x, std::span<const std::int64_t> p, bool q, bool b) const override {
    go(x, p, q, b);
  }
  void apply(tensor_view<float16> x, std::span<const std::int64_t> p, bool q, bool b) const override { go(x, p, q, b); }
  [[nodiscard]] const posenc::rope* as_rope() const override {
    if constexpr (std::is_same_v<T, posenc::rope>)
      return &t;
    else
      return nullptr;
  }
};

/// A chain of q/k transforms applied first to last (backward: last to first), as one encoder type.
/// Models qk_transform_backward_encoding and, for the KV caches, the steering interface of a RoPE
/// (schedule / at / rotate / rerotate / rotate_delta), which it forwards to a lone RoPE and refuses
/// (config_error) for anything else.
class dyn_transform {
 public:
  explicit dyn_transform(std::vector<std::shared_ptr<const transform_base>> parts);
  /// The identity on rows of head_dim values (no parts): what an encoder without transforms uses.
  explicit dyn_transform(std::ptrdiff_t head_dim) : name_("identity"), head_dim_(head_dim) {}
  [[nodiscard]] std::string_view name() const noexcept { return name_; }
  [[nodiscard]] std::ptrdiff_t head_dim() const noexcept { return head_dim_; }
  [[nodiscard]] double softmax_scale_multiplier() const noexcept { return multiplier_; }
  [[nodiscard]] const std::vector<std::shared_ptr<const transform_base>>& parts() const noexcept { return parts_; }

  template <class T>
  void transform_q(tensor_view<T> x, std::span<const std::int64_t> p) const {
    for (const auto& t : parts_) t->apply(x, p, true, false);
  }
  template <class T>
  void transform_k(tensor_view<T> x, std::span<const std::int64_t> p) const {
    for (const auto& t : parts_) t->apply(x, p, false, false);
  }
  template <class T>
  void transform_q_backward(tensor_view<T> x, std::span<const std::int64_t> p) const {
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) (*it)->apply(x, p, true, true);
  }
  template <class T>
  void transform_k_backward(tensor_view<T> x, std::span<const std::int64_t> p) const {
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) (*it)->apply(x, p, false, true);
  }

  // Steering (kv_cache / paged_kv_cache).
  struct schedule_info {
    bool dependent = false;
    [[nodiscard]] bool length_dependent() const noexcept { return dependent; }
  };
  [[nodiscard]] schedule_info schedule() const;
  // An empty chain (no transform) steers nothing: these are no-ops there.
  [[nodiscard]] posenc::rope_frequencies at(std::int64_t length) const {
    return parts_.empty() ? posenc::rope_frequencies{} : lone_rope("at").at(length);
  }
  [[nodiscard]] std::int64_t effective_length(std::span<const std::int64_t> p) const noexcept {
    return posenc::rope_schedule::effective_length(p);
  }
  template <class T>
  void rotate(tensor_view<T> x, std::span<const std::int64_t> p, const posenc::rope_frequencies& f) const {
    if (!parts_.empty()) lone_rope("rotate").rotate(x, p, f);
  }
  template <class T>
  void rerotate(tensor_view<T> x, std::span<const std::int64_t> p, const posenc::rope_frequencies& from,
                const posenc::rope_frequencies& to) const {
    if (!parts_.empty()) lone_rope("rerotate").rerotate(x, p, from, to);
  }
  template <class T>
  void rotate_delta(tensor_view<T> x, std::span<const std::int64_t> d, const posenc::rope_frequencies& f) const {
    if (!parts_.empty()) lone_rope("shift_window").rotate_delta(x, d, f);
  }
  /// True when the chain is one RoPE (the only transform a cache can move or re-rotate).
  [[nodiscard]] bool is_lone_rope() const noexcept { return parts_.size() == 1 && parts_[0]->as_rope() != nullptr; }

 private:
  [[nodiscard]] const posenc::rope& lone_rope(const char* what) const;
  std::vector<std::shared_ptr<const transform_base>> parts_;
  std::string name_;
  std::ptrdiff_t head_dim_ = 0;
  double multiplier_ = 1.0;
};

// ---- the operations a bias type carries ----------------------------------------------------------

/// Which operation of the attention family.
enum class op : unsigned char {
  attention,           // posenc::attention (contiguous, or ragged when cu_seqlens are given)
  attention_paged,     // posenc::attention over a paged_kv
  attention_backward,  // posenc::attention_backward
  sdpa,                // posenc::sdpa (float or double)
  sdpa_backward,       // posenc::sdpa_backward (float or double)
};

/// Everything one call carries from Python to C++ (arrays borrowed, options with owned storage).
struct call_args {
  array_ref q, k, v, out, dout, dq, dk, dv;
  std::span<float> lse;
  posenc::attention_options opts;
  std::span<double> encoder_grad, sinks_grad;
  // owned storage the options' spans point into
  std::vector<std::int64_t> qpos, kpos, klen;
  std::vector<std::uint8_t> kmask;
  std::vector<std::int32_t> qseg, kseg, cu_q, cu_k, block_table, lengths;
  std::vector<double> sinks;
  bool ragged = false;
  bool bf16_dot_products = true, q8_0_int8_dot_products = true;  // fast_attention_options
  std::ptrdiff_t blocks_per_sequence = 0;
};

struct kv_cache_holder;
struct paged_cache_holder;

/// What a cache operation needs.
struct cache_args {
  array_ref q, k, v, out;
  std::vector<std::int64_t> positions;
  std::vector<std::uint8_t> token_mask;
  std::vector<std::ptrdiff_t> sequences;
  posenc::attention_options opts;
  std::vector<double> sinks;
  std::ptrdiff_t sequence = 0, sink_tokens = 0, evict = 0;
  int event = 0;  // out: posenc::cache_event of an append
};
enum class cache_op : unsigned char { append, attend, shift_window };

/// The attention family instantiated for one bias type (see ops.hpp).
struct bias_ops {
  virtual ~bias_ops() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual bool is_none() const { return false; }
  [[nodiscard]] virtual std::ptrdiff_t parameter_count() const { return 0; }
  [[nodiscard]] virtual std::ptrdiff_t num_heads() const { return 0; }  // 0: no per-head bias
  [[nodiscard]] virtual std::ptrdiff_t head_dim() const { return 0; }   // 0: no relative k/v
  /// Whether the fused attention, its backward and the caches compute this encoder (else sdpa only).
  [[nodiscard]] virtual bool fused() const { return true; }
  /// Runs `o` with the encoder combine(*t, bias) (t null: the bias alone). The GIL is released here.
  virtual void run(op o, call_args& a, const dyn_transform* t) const = 0;
  virtual void run_cache(cache_op o, kv_cache_holder& c, cache_args& a, const dyn_transform* t) const = 0;
  virtual void run_paged_cache(cache_op o, paged_cache_holder& c, cache_args& a, const dyn_transform* t) const = 0;
  /// bias[h, i, j] for query positions qp and key positions kp (score-bias encoders), as float64.
  virtual void bias_matrix(std::span<const std::int64_t> qp, std::span<const std::int64_t> kp,
                           std::span<double> out) const;
};

/// What every Python encoder object is: a transform chain (maybe empty) and a bias (maybe none).
struct py_encoder {
  std::vector<std::shared_ptr<const transform_base>> transforms;
  std::shared_ptr<const bias_ops> bias;
  std::optional<dyn_transform> chain;  // built from `transforms` when non-empty
  void finish();                       // builds `chain`, checks head_dim agreement
  [[nodiscard]] std::string name() const;
  virtual ~py_encoder() = default;
};

/// A Python encoder class over one C++ encoder value (RoPE, ALiBi, ...), which stays readable.
template <class T>
struct py_enc final : py_encoder {
  T value;
  explicit py_enc(T v) : value(std::move(v)) {}
};
struct py_nope final : py_encoder {};

/// The bias-free ops (no_position / the transform chain alone).
std::shared_ptr<const bias_ops> none_ops();

/// The options object shared by the attention entry points, from keyword arguments.
void fill_options(call_args& a, const py::kwargs& kw, std::ptrdiff_t batch, std::ptrdiff_t sq, std::ptrdiff_t sk,
                  std::ptrdiff_t hq);

/// Registration of each part of the module.
void init_arrays(py::module_& m);
void init_transforms(py::module_& m);
void init_additive(py::module_& m);
void init_alibi(py::module_& m);
void init_t5(py::module_& m);
void init_shaw(py::module_& m);
void init_deberta(py::module_& m);
void init_fire(py::module_& m);
void init_kerple(py::module_& m);
void init_cope(py::module_& m);
void init_vision(py::module_& m);
void init_attention(py::module_& m);
void init_caches(py::module_& m);
void init_config(py::module_& m);  // config.cpp, built with nlohmann-json

/// Thread limit for posenc's pool (0: all of the pool's threads); the executor using it.
int& max_threads() noexcept;
posenc::fast_attention_options fast_options();

}  // namespace pyposenc
