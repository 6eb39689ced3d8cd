// examples/04_config_to_attention.cpp — load a model's config.json, build its RoPE, run attention.
//
// Needs the optional JSON reader (posenc/config/json.hpp, target posenc::json). Reads the
// Llama-3.1 sample config, prints what it says about positions, and runs causal attention over
// 6 tokens of 2 heads with the model's RoPE (llama3 scaling) on a head_dim of 128.
#if __has_include(<nlohmann/json.hpp>)
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <posenc/attention/sdpa.hpp>
#include <posenc/config/json.hpp>
#include <posenc/rope/rope.hpp>

int main() {
  const std::string path = std::string(POSENC_EXAMPLES_DIR) + "/../tests/golden/configs/llama3_1_8b.json";
  const posenc::model_config m = posenc::load_hf_config_file(path);
  std::printf("%s: rope_type %s, head_dim %td, theta %g, %zu warnings\n", m.model_type.c_str(), m.rope_type.c_str(),
              m.rope->head_dim, m.rope->theta, m.warnings.size());
  const posenc::rope rope(*m.rope);  // validates

  constexpr std::ptrdiff_t T = 6, H = 2, D = 128;
  std::vector<double> q(T * H * D), k(q.size()), v(q.size()), out(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = std::sin(0.37 * static_cast<double>(i));
    k[i] = std::cos(0.23 * static_cast<double>(i));
    v[i] = std::sin(0.11 * static_cast<double>(i) + 1);
  }
  using cview = posenc::tensor_view<const double>;
  posenc::sdpa(cview::thd(q.data(), T, H, D), cview::thd(k.data(), T, H, D), cview::thd(v.data(), T, H, D),
               posenc::tensor_view<double>::thd(out.data(), T, H, D), rope, {.causal = true});
  // The first token can only attend to itself: its output is its own value row.
  for (std::ptrdiff_t d = 0; d < D; ++d)
    if (std::fabs(out[d] - v[d]) > 1e-12) return 1;
  std::printf("out[5][0][0] = %.9f\n", out[(5 * H) * D]);
  return m.rope_type == "llama3" ? 0 : 1;
}
#else
#include <cstdio>
int main() {
  std::puts("skipped: built without nlohmann-json");
  return 0;
}
#endif
