// tests/config/gguf_reader_test.cpp — the .gguf reader's value types, malformed headers and tensor
// infos, and its limits (metadata bytes, key count, kept array elements, duplicates): each over-limit
// input is a config_error naming the source, and each limit holds exactly at its value.
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/config/gguf.hpp>

#include "gguf_writer.hpp"
#include "support/check.hpp"

using namespace posenc;
using posenc_test::error_of;
using posenc_test::gguf_writer;

namespace {

gguf_contents read(const std::string& bytes, const gguf_limits& limits = {}) {
  std::istringstream in(bytes);
  return read_gguf(in, "t.gguf", limits);
}

/// The message of the config_error reading `bytes` throws; CHECKs it names the source.
std::string read_error(const std::string& bytes, const gguf_limits& limits = {}) {
  return error_of([&] { (void)read(bytes, limits); }, "t.gguf");
}

bool contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("gguf reader: every scalar type, strings, bool, nested arrays") {
  gguf_writer w;
  w.raw("u8", 0, gguf_writer::le(std::uint8_t{200}));
  w.raw("i8", 1, gguf_writer::le(std::int8_t{-100}));
  w.raw("u16", 2, gguf_writer::le(std::uint16_t{60000}));
  w.raw("i16", 3, gguf_writer::le(std::int16_t{-30000}));
  w.u32("u32", 4000000000u);
  w.i32("i32", -2000000000);
  w.f32("f32", 0.5f);
  w.boolean("bool", true);
  w.boolean("bool0", false);
  w.u64("u64", 1u << 20);
  w.u64("u64big", std::numeric_limits<std::uint64_t>::max());
  w.raw("i64", 11, gguf_writer::le(std::int64_t{-(std::int64_t{1} << 40)}));
  w.f64("f64", -1.25);
  w.str("s", "text");
  w.str_array("sa", {"a", "bc"});
  // An array of two arrays of i32: [[1, 2], [3]].
  std::string nested = gguf_writer::le(std::uint32_t{5}) + gguf_writer::le(std::uint64_t{2});
  nested += gguf_writer::le(std::int32_t{1}) + gguf_writer::le(std::int32_t{2});
  nested = gguf_writer::le(std::uint32_t{9}) + gguf_writer::le(std::uint64_t{2}) + nested +
           gguf_writer::le(std::uint32_t{5}) + gguf_writer::le(std::uint64_t{1}) + gguf_writer::le(std::int32_t{3});
  w.raw("nested", 9, nested);
  w.version(2);
  const auto c = read(w.bytes());
  CHECK(c.version == 2);
  const auto& md = c.metadata;
  CHECK(md.find("u8")->as_integer() == 200);
  CHECK(md.find("i8")->as_integer() == -100);
  CHECK(md.find("u16")->as_integer() == 60000);
  CHECK(md.find("i16")->as_integer() == -30000);
  CHECK(md.find("u32")->as_integer() == 4000000000);
  CHECK(md.find("i32")->as_integer() == -2000000000);
  CHECK(md.find("f32")->as_number() == 0.5);
  CHECK(md.find("bool")->as_bool());
  CHECK_FALSE(md.find("bool0")->as_bool());
  CHECK(md.find("u64")->as_integer() == (1 << 20));
  CHECK_FALSE(md.find("u64big")->is_integer());  // beyond int64: kept as a number
  CHECK(md.find("u64big")->as_number() == 18446744073709551615.0);
  CHECK(md.find("i64")->as_integer() == -(std::int64_t{1} << 40));
  CHECK(md.find("f64")->as_number() == -1.25);
  CHECK(md.find("s")->as_string() == "text");
  REQUIRE(md.find("sa")->size() == 2);
  CHECK(md.find("sa")->items()[1].as_string() == "bc");
  const config_value* n = md.find("nested");
  REQUIRE(n);
  REQUIRE(n->size() == 2);
  CHECK(n->items()[0] == config_value::list({config_value::integer(1), config_value::integer(2)}));
  CHECK(n->items()[1] == config_value::list({config_value::integer(3)}));
  // Insertion order is the file's order.
  CHECK(md.members().front().key == "u8");
  CHECK(md.members().back().key == "nested");
}

TEST_CASE("gguf reader: malformed values and headers are config_error naming the source") {
  {
    gguf_writer w;
    w.raw("x", 13, "");
    CHECK(contains(read_error(w.bytes()), "unknown GGUF value type 13"));
  }
  {
    gguf_writer w;
    w.raw("x", 9, gguf_writer::le(std::uint32_t{13}) + gguf_writer::le(std::uint64_t{1}) + "abcd");
    CHECK(contains(read_error(w.bytes()), "unknown GGUF array element type 13"));
  }
  {
    // Arrays of arrays of arrays of arrays: deeper than the reader follows.
    std::string v;
    for (int d = 0; d < 4; ++d) v += gguf_writer::le(std::uint32_t{9}) + gguf_writer::le(std::uint64_t{1});
    v += gguf_writer::le(std::uint32_t{5}) + gguf_writer::le(std::uint64_t{0});
    gguf_writer w;
    w.raw("x", 9, v);  // arrays at depths 0, 1, 2 and 3
    CHECK(contains(read_error(w.bytes()), "nested too deeply"));
  }
  {
    gguf_writer w;
    w.raw("", 4, gguf_writer::le(std::uint32_t{1}));
    CHECK(contains(read_error(w.bytes()), "empty or oversized GGUF key"));
  }
  {
    gguf_writer w;
    w.version(4);
    CHECK(contains(read_error(w.bytes()), "unsupported GGUF version 4"));
    w.version(1);
    CHECK(contains(read_error(w.bytes()), "unsupported GGUF version 1"));
  }
  {
    // Counts no file of this size can hold.
    std::string b = "GGUF" + gguf_writer::le(std::uint32_t{3}) + gguf_writer::le(std::uint64_t{0}) +
                    gguf_writer::le(std::uint64_t{1} << 40);
    CHECK(contains(read_error(b), "counts exceed the file size"));
  }
  {
    // An oversized string value is dropped to "" (the reader never allocates more than 64 KiB for one).
    gguf_writer w;
    w.str("big", std::string(70000, 'x'));
    CHECK(read(w.bytes()).metadata.find("big")->as_string().empty());
  }
}

TEST_CASE("gguf reader: tensor infos — types, sizes, offsets, alignment") {
  const auto f16_one = gguf_writer::le(std::uint16_t{0x3C00});  // 1.0 in binary16
  {
    gguf_writer w;
    w.tensor_raw("rope_freqs.weight", {2}, 1, 0, f16_one + gguf_writer::le(std::uint16_t{0x4000}));
    const auto c = read(w.bytes());
    const config_value* t = c.tensors.find("rope_freqs.weight");
    REQUIRE(t);
    CHECK(*t == config_value::list({config_value::number(1.0), config_value::number(2.0)}));
  }
  {
    // Tensors other than the RoPE ones are listed but never read (their data may be absent).
    gguf_writer w;
    w.tensor_raw("blk.0.attn_q.weight", {4096, 4096}, 0, 1u << 30, "");
    CHECK(read(w.bytes()).tensors.size() == 0);
  }
  {
    gguf_writer w;
    w.tensor_raw("rope_freqs.weight", {2}, 2, 0, std::string(64, '\0'));
    CHECK(contains(read_error(w.bytes()), "GGML type 2 (expected F32 or F16)"));
  }
  {
    gguf_writer w;
    w.tensor_raw("rope_freqs.weight", {65537}, 0, 0, "");
    CHECK(contains(read_error(w.bytes()), "too large for a RoPE factor table"));
    gguf_writer huge;  // element count saturates instead of wrapping
    huge.tensor_raw("rope_freqs.weight", {1u << 31, 1u << 31, 1u << 31}, 0, 0, "");
    CHECK(contains(read_error(huge.bytes()), "too large for a RoPE factor table"));
  }
  {
    gguf_writer w;
    w.tensor_raw("rope_freqs.weight", std::vector<std::uint64_t>(9, 1), 0, 0, "");
    CHECK(contains(read_error(w.bytes()), "has 9 dimensions"));
  }
  {
    gguf_writer w;
    w.tensor_raw("rope_freqs.weight", {1}, 0, (std::uint64_t{1} << 62) + 1, "");
    CHECK(contains(read_error(w.bytes()), "offset is out of range"));
    gguf_writer past;
    past.tensor_raw("rope_freqs.weight", {1}, 0, 1u << 20, "");
    CHECK(contains(read_error(past.bytes()), "offset beyond end of file"));
  }
  for (const std::int64_t a : {0, 3, 1 << 21, -32}) {
    gguf_writer w;
    w.raw("general.alignment", 11, gguf_writer::le(a));
    CHECK(contains(read_error(w.bytes()), "general.alignment = " + std::to_string(a) + " is invalid"));
  }
  {
    // The data section starts at the alignment: header 24 + key 33 + tensor info 49 = 106 bytes; the
    // writer pads to 128 and puts the data there. Alignment 1 puts the data start at 106, so offset
    // 22 reads it; the default alignment 32 would read at 150, past the end.
    gguf_writer w;
    w.u32("general.alignment", 1);
    w.tensor_raw("rope_freqs.weight", {1}, 0, 22, gguf_writer::le(2.0f));
    REQUIRE(w.bytes().size() == 132);
    CHECK(read(w.bytes()).tensors.find("rope_freqs.weight")->items()[0].as_number() == 2.0);
    gguf_writer d;
    d.u32("general.alignmenx", 1);  // same sizes, default alignment
    d.tensor_raw("rope_freqs.weight", {1}, 0, 22, gguf_writer::le(2.0f));
    CHECK(contains(read_error(d.bytes()), "offset beyond end of file"));
  }
}

TEST_CASE("gguf reader: limits on metadata bytes, keys and kept array elements hold exactly") {
  gguf_writer w;
  w.str("general.architecture", "llama");
  w.u32("llama.attention.head_count", 8);
  const std::string b = w.bytes();
  // No tensors: the metadata section is everything but the trailing padding.
  std::size_t end = b.size();
  while (end > 0 && b[end - 1] == '\0') --end;
  end += 3;  // the last key is a u32 = 8: three zero bytes belong to it
  CHECK_NOTHROW(read(b, {.max_metadata_bytes = end}));
  auto msg = read_error(b, {.max_metadata_bytes = end - 1});
  CHECK(contains(msg, "larger than " + std::to_string(end - 1) + " bytes (gguf_limits::max_metadata_bytes)"));

  CHECK_NOTHROW(read(b, {.max_keys = 2}));
  msg = read_error(b, {.max_keys = 1});
  CHECK(contains(msg, "2 GGUF key/values: more than 1 (gguf_limits::max_keys)"));

  // The default metadata cap, 64 MiB: a 64 MiB + 1 byte skipped array is refused.
  gguf_writer big;
  big.zero_array("tokenizer.ggml.scores", 0, (std::uint64_t{64} << 20) + 1, 1);
  msg = read_error(big.bytes());
  CHECK(contains(msg, "gguf_limits::max_metadata_bytes"));

  // The default key cap, 65536.
  gguf_writer many;
  for (int k = 0; k <= 65536; ++k) many.u32("k" + std::to_string(k), 1);
  msg = read_error(many.bytes());
  CHECK(contains(msg, "65537 GGUF key/values: more than 65536"));

  // Kept array elements: 3 arrays of 100 with a budget of 300 pass, 299 does not; arrays over
  // max_array are skipped and cost nothing.
  gguf_writer arrays;
  for (int k = 0; k < 3; ++k) arrays.i32_array("a" + std::to_string(k), std::vector<std::int32_t>(100, k));
  arrays.i32_array("skipped", std::vector<std::int32_t>(101, 7));
  const auto c = read(arrays.bytes(), {.max_array = 100, .max_kept_elements = 300});
  CHECK(c.metadata.find("a2")->size() == 100);
  CHECK(c.metadata.find("skipped") == nullptr);
  msg = read_error(arrays.bytes(), {.max_array = 100, .max_kept_elements = 299});
  CHECK(contains(msg, "more than 299 kept elements in all"));
  // The default: 65 arrays of 4096 are 266 240 > 2^18 elements.
  gguf_writer per_layer;
  for (int k = 0; k < 65; ++k) per_layer.zero_array("a" + std::to_string(k), 5, 4096, 4);
  msg = read_error(per_layer.bytes());
  CHECK(contains(msg, "more than 262144 kept elements"));
  // Arrays of strings count their strings.
  gguf_writer strings;
  strings.str_array("s", std::vector<std::string>(10, "x"));
  CHECK_NOTHROW(read(strings.bytes(), {.max_kept_elements = 10}));
  CHECK(contains(read_error(strings.bytes(), {.max_kept_elements = 9}), "more than 9 kept elements"));
}

TEST_CASE("gguf reader: a key or RoPE tensor given twice is an error, not a second read") {
  gguf_writer w;
  w.u32("llama.context_length", 1);
  w.u32("llama.context_length", 2);
  CHECK(contains(read_error(w.bytes()), "GGUF key llama.context_length appears twice"));
  gguf_writer t;
  t.tensor_f32("rope_freqs.weight", {1.0f});
  t.tensor_f32("rope_freqs.weight", {2.0f});
  CHECK(contains(read_error(t.bytes()), "tensor rope_freqs.weight appears twice"));
}
