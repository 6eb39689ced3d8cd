#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/core/positions.hpp>

using V = std::vector<std::int64_t>;

TEST_CASE("arange with offset", "[positions]") {
  CHECK(posenc::arange_positions(4, 7) == V{7, 8, 9, 10});
  CHECK(posenc::arange_positions(0).empty());
  CHECK_THROWS_WITH(posenc::arange_positions(-1), Catch::Contains("count") && Catch::Contains("-1"));
}

TEST_CASE("attention mask: left padding gives the same positions as no padding", "[positions]") {
  const std::vector<int> mask{0, 0, 1, 1, 1,  //
                              1, 1, 1, 1, 1,  //
                              1, 1, 1, 0, 0};
  const auto p = posenc::positions_from_attention_mask<int>(mask, 3, 5);
  CHECK(p == V{1, 1, 0, 1, 2,  //
               0, 1, 2, 3, 4,  //
               0, 1, 2, 1, 1});
  const auto q = posenc::positions_from_attention_mask<int>(mask, 3, 5, 10, -1);
  CHECK(q == V{-1, -1, 10, 11, 12, 10, 11, 12, 13, 14, 10, 11, 12, -1, -1});
  CHECK_THROWS_AS(posenc::positions_from_attention_mask<int>(mask, 2, 5), posenc::shape_error);
}

TEST_CASE("segment ids restart positions per packed sequence", "[positions]") {
  const std::vector<int> seg{0, 0, 0, 1, 1, 2, -1, -1};
  CHECK(posenc::positions_from_segment_ids<int>(seg, 1, 8) == V{0, 1, 2, 0, 1, 0, 1, 1});
  const std::vector<int> two{5, 5, 7, 7, 7, 7};
  CHECK(posenc::positions_from_segment_ids<int>(two, 2, 3) == V{0, 1, 0, 0, 1, 2});
}

TEST_CASE("cu_seqlens", "[positions]") {
  const std::vector<int> cu{0, 3, 3, 5};
  CHECK(posenc::positions_from_cu_seqlens<int>(cu) == V{0, 1, 2, 0, 1});
  CHECK(posenc::segment_ids_from_cu_seqlens<int>(cu) == std::vector<std::int32_t>{0, 0, 0, 2, 2});
  const std::vector<int> bad{0, 3, 2};
  CHECK_THROWS_WITH(posenc::positions_from_cu_seqlens<int>(bad), Catch::Contains("cu_seqlens[2]"));
  const std::vector<int> bad0{1, 3};
  CHECK_THROWS_AS(posenc::positions_from_cu_seqlens<int>(bad0), posenc::shape_error);
}
