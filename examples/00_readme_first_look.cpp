// examples/00_readme_first_look.cpp — the "A first look" snippet of the README, compiled and run.
//
// Llama 3.1's RoPE applied to q and k in place, then the reference attention with RoPE and an ALiBi
// bias combined. Checks that the in-place rotation and the attention's own rotation agree.
#include <cmath>
#include <cstdio>
#include <vector>

#include <posenc/posenc.hpp>

int main() {
  constexpr std::ptrdiff_t batch = 1, tokens = 5, heads = 4, D = 128;
  const posenc::rope rope({.head_dim = 128,
                           .theta = 500000,
                           .scaling = posenc::llama3_scaling{.factor = 8, .original_max_position = 8192}});

  std::vector<float> q(batch * tokens * heads * D), k(q.size()), v(q.size()), out(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = std::sin(0.37f * static_cast<float>(i));
    k[i] = std::cos(0.23f * static_cast<float>(i));
    v[i] = std::sin(0.11f * static_cast<float>(i) + 1.0f);
  }
  const auto positions = posenc::arange_positions(tokens, 9000);  // beyond Llama 3's original 8192

  using view = posenc::tensor_view<float>;
  const std::vector<float> q0 = q, k0 = k;
  const auto q_view = view::bthd(q.data(), batch, tokens, heads, D);
  rope.transform_q(q_view, positions);
  rope.transform_k(view::bthd(k.data(), batch, tokens, heads, D), positions);

  // The attention rotates copies of q0/k0 itself; with a zero ALiBi slope it must equal plain
  // attention over the rotated q/k computed above.
  const posenc::alibi alibi({.num_heads = heads, .slopes = std::vector<double>(heads, 0.0)});
  using cview = posenc::tensor_view<const float>;
  std::vector<float> out_ref(out.size());
  posenc::sdpa(cview::bthd(q0.data(), batch, tokens, heads, D), cview::bthd(k0.data(), batch, tokens, heads, D),
               cview::bthd(v.data(), batch, tokens, heads, D), view::bthd(out.data(), batch, tokens, heads, D),
               posenc::combine(rope, alibi),
               {.causal = true, .query_positions = positions, .key_positions = positions});
  posenc::sdpa(cview::bthd(q.data(), batch, tokens, heads, D), cview::bthd(k.data(), batch, tokens, heads, D),
               cview::bthd(v.data(), batch, tokens, heads, D), view::bthd(out_ref.data(), batch, tokens, heads, D),
               posenc::no_position{}, {.causal = true, .query_positions = positions, .key_positions = positions});
  double worst = 0;
  for (std::size_t i = 0; i < out.size(); ++i) worst = std::fmax(worst, std::fabs(out[i] - out_ref[i]));
  std::printf("max |sdpa(rope+alibi) - sdpa(pre-rotated)| = %.3g\n", worst);
  return worst < 1e-5 ? 0 : 1;
}
