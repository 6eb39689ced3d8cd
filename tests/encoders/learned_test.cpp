// Learned absolute embeddings: offsets, out-of-range policies, float/double input, invalid inputs.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/encoders/learned.hpp>

#include "support/check.hpp"

using namespace posenc;
using posenc_test::error_of;

namespace {
// table[r][c] = 100 r + c
std::vector<float> make_table(int rows, int d) {
  std::vector<float> t(static_cast<std::size_t>(rows * d));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < d; ++c) t[static_cast<std::size_t>(r * d + c)] = static_cast<float>(100 * r + c);
  return t;
}

}  // namespace

TEST_CASE("learned: add and encode use row p + offset", "[learned]") {
  const auto t = make_table(6, 3);
  const learned_absolute gpt2({.max_len = 6, .model_dim = 3}, std::span<const float>(t));
  std::vector<double> row{1, 1, 1};
  gpt2.add(2, std::span<double>(row));
  CHECK(row == std::vector<double>{201, 202, 203});

  const learned_absolute opt({.max_len = 6, .model_dim = 3, .offset = 2}, std::span<const float>(t));
  std::vector<float> rf(3, 0.5f);
  opt.add(1, std::span<float>(rf));
  CHECK(rf == std::vector<float>{300.5f, 301.5f, 302.5f});
  opt.encode(3, std::span<float>(rf));
  CHECK(rf == std::vector<float>{500, 501, 502});
  CHECK(opt.row(0)[2] == 2.0);
  CHECK(opt.max_len() == 6);
  CHECK(opt.model_dim() == 3);
}

TEST_CASE("learned: double input is copied, copies share the table", "[learned]") {
  std::vector<double> t{0.1, 0.2, 0.3, 0.4};
  const learned_absolute a({.max_len = 2, .model_dim = 2}, std::span<const double>(t));
  t[0] = 99;  // the encoder owns a copy
  const learned_absolute b = a;
  CHECK(b.row(0)[0] == 0.1);
  CHECK(a.row(1).data() == b.row(1).data());
}

TEST_CASE("learned: out-of-range policies", "[learned]") {
  const auto t = make_table(4, 2);
  const std::span<const float> ts(t);
  std::vector<double> row(2, 0.0);
  const learned_absolute err({.max_len = 4, .model_dim = 2, .offset = 2}, ts);
  const std::string msg = error_of([&] { err.add(2, std::span<double>(row)); });
  CHECK(msg.find("position = 2") != std::string::npos);
  CHECK(msg.find("max_len = 4") != std::string::npos);
  CHECK_THROWS_AS(err.add(1000000000000, std::span<double>(row)), config_error);
  CHECK(error_of([&] { err.add(-1, std::span<double>(row)); }).find("position = -1") != std::string::npos);

  const learned_absolute clamp(
      {.max_len = 4, .model_dim = 2, .offset = 2, .out_of_range = out_of_range_policy::clamp_to_last}, ts);
  clamp.encode(7, std::span<double>(row));
  CHECK(row == std::vector<double>{300, 301});
  CHECK_THROWS_AS(clamp.encode(-1, std::span<double>(row)), config_error);  // negative is always an error

  const learned_absolute zero({.max_len = 4, .model_dim = 2, .out_of_range = out_of_range_policy::zero}, ts);
  row = {5, 6};
  zero.add(4, std::span<double>(row));
  CHECK(row == std::vector<double>{5, 6});
  zero.encode(9, std::span<double>(row));
  CHECK(row == std::vector<double>{0, 0});
  zero.encode(3, std::span<double>(row));
  CHECK(row == std::vector<double>{300, 301});
}

TEST_CASE("learned: invalid configuration names the parameter", "[learned][invalid]") {
  const auto t = make_table(4, 2);
  const std::span<const float> ts(t);
  CHECK(error_of([&] {
          learned_absolute({.max_len = 0, .model_dim = 2}, ts.first(0));
        }).find("learned_absolute.max_len = 0") != std::string::npos);
  CHECK(error_of([&] {
          learned_absolute({.max_len = 4, .model_dim = 0}, ts);
        }).find("learned_absolute.model_dim = 0") != std::string::npos);
  CHECK(error_of([&] {
          learned_absolute({.max_len = 3, .model_dim = 2}, ts);
        }).find("learned_absolute.table.size = 8") != std::string::npos);
  CHECK(error_of([&] {
          learned_absolute({.max_len = 4, .model_dim = 2}, ts.first(7));
        }).find("learned_absolute.table.size") != std::string::npos);
  CHECK(error_of([&] {
          learned_absolute({.max_len = 4, .model_dim = 2, .offset = 4}, ts);
        }).find("learned_absolute.offset = 4") != std::string::npos);
  CHECK(error_of([&] {
          learned_absolute({.max_len = 4, .model_dim = 2, .offset = -1}, ts);
        }).find("learned_absolute.offset = -1") != std::string::npos);
  const learned_absolute ok({.max_len = 4, .model_dim = 2}, ts);
  CHECK(error_of([&] { (void)ok.row(4); }).find("learned_absolute.row = 4") != std::string::npos);
}
