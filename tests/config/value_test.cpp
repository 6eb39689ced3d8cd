// tests/config/value_test.cpp — config_value: kinds, objects (insertion order, replacement in place,
// copies), equality, text for messages; and the JSON converter's limits (depth, value count).
#include <cmath>
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include <posenc/config/json.hpp>
#include <posenc/config/value.hpp>

#include "support/check.hpp"

using namespace posenc;
using posenc_test::error_of;

TEST_CASE("value: kinds and accessors") {
  const config_value n;
  CHECK(n.is_null());
  CHECK(n.type() == config_value::kind::null);
  CHECK_FALSE(n.is_number());
  CHECK(n.size() == 0);
  CHECK(n.find("x") == nullptr);
  CHECK(n.members().empty());

  const auto b = config_value::boolean(true);
  CHECK(b.is_bool());
  CHECK(b.as_bool());
  const auto i = config_value::integer(-7);
  CHECK(i.is_integer());
  CHECK(i.is_number());
  CHECK(i.as_integer() == -7);
  CHECK(i.as_number() == -7.0);
  const auto d = config_value::number(2.5);
  CHECK(d.is_number());
  CHECK_FALSE(d.is_integer());
  CHECK(d.as_number() == 2.5);
  const auto s = config_value::string("abc");
  CHECK(s.is_string());
  CHECK(s.as_string() == "abc");
  auto l = config_value::list({config_value::integer(1)});
  l.push_back(config_value::string("x"));
  CHECK(l.is_list());
  CHECK(l.size() == 2);
  CHECK(l.items()[1].as_string() == "x");
  const auto o = config_value::object();
  CHECK(o.is_object());
  CHECK(o.size() == 0);
  CHECK(o.find("") == nullptr);
  CHECK(o.members().empty());
}

TEST_CASE("value: objects keep insertion order; set replaces in place; copies are deep") {
  auto o = config_value::object();
  o.set("zeta", config_value::integer(1));
  o.set("alpha", config_value::integer(2));
  o.set("mid", config_value::integer(3));
  o.set("zeta", config_value::integer(4));  // replaced, stays first
  REQUIRE(o.size() == 3);
  const auto m = o.members();
  CHECK(m[0].key == "zeta");
  CHECK(m[0].value.as_integer() == 4);
  CHECK(m[1].key == "alpha");
  CHECK(m[2].key == "mid");
  REQUIRE(o.find("alpha"));
  CHECK(o.find("alpha")->as_integer() == 2);
  CHECK(o.find("alph") == nullptr);
  CHECK(o.find("alphaa") == nullptr);

  // A copy is independent and keeps the order; a moved-from object is empty.
  config_value c = o;
  c.set("alpha", config_value::string("changed"));
  c.set("new", config_value{});
  CHECK(o.find("alpha")->as_integer() == 2);
  CHECK(o.size() == 3);
  CHECK(c.size() == 4);
  CHECK(c.members()[0].key == "zeta");
  CHECK(c.members()[3].key == "new");
  config_value a;
  a = c;  // copy-assign
  CHECK(a == c);
  config_value& alias = a;
  a = alias;  // self-assignment keeps the value
  CHECK(a == c);
  config_value moved = std::move(a);
  CHECK(moved == c);
  config_value nested = config_value::object();
  nested.set("inner", o);
  const config_value nested_copy = nested;
  REQUIRE(nested_copy.find("inner"));
  CHECK(nested_copy.find("inner")->members()[1].key == "alpha");
  CHECK(nested_copy == nested);
}

TEST_CASE("value: 100 000 keys, each found, order kept (set/find are O(log n))") {
  // The old linear set took ~1.3 s for 40 000 keys; at 10^5 that is ~8 s, now milliseconds. Not a
  // timing test: it checks what the index must get right at that size.
  constexpr int n = 100000;
  auto o = config_value::object();
  for (int k = 0; k < n; ++k) o.set("key" + std::to_string((k * 7919) % n), config_value::integer(k));
  REQUIRE(o.size() == static_cast<std::size_t>(n));  // 7919 is prime: every key once
  for (int k = 0; k < n; k += 997) {
    const config_value* v = o.find("key" + std::to_string((k * 7919) % n));
    REQUIRE(v);
    CHECK(v->as_integer() == k);
  }
  const auto m = o.members();
  CHECK(m.front().key == "key0");
  CHECK(m[1].key == "key7919");
  CHECK(m.back().value.as_integer() == n - 1);
}

TEST_CASE("value: equality across kinds") {
  CHECK(config_value::integer(2) == config_value::number(2.0));  // JSON 2 and 2.0 are the same number
  CHECK_FALSE(config_value::integer(2) == config_value::number(2.5));
  CHECK_FALSE(config_value::integer(std::numeric_limits<std::int64_t>::max()) ==
              config_value::integer(std::numeric_limits<std::int64_t>::max() - 1));  // same double, different ints
  CHECK(config_value{} == config_value{});
  CHECK_FALSE(config_value{} == config_value::boolean(false));
  CHECK(config_value::boolean(true) == config_value::boolean(true));
  CHECK_FALSE(config_value::boolean(true) == config_value::boolean(false));
  CHECK(config_value::string("a") == config_value::string("a"));
  CHECK_FALSE(config_value::string("a") == config_value::string("b"));
  CHECK(config_value::list({config_value::integer(1)}) == config_value::list({config_value::number(1.0)}));
  CHECK_FALSE(config_value::list({config_value::integer(1)}) == config_value::list());
  auto a = config_value::object(), b = config_value::object();
  a.set("x", config_value::integer(1));
  a.set("y", config_value::integer(2));
  b.set("y", config_value::integer(2));
  b.set("x", config_value::integer(1));
  CHECK(a == b);  // member order does not matter for equality
  b.set("x", config_value::integer(3));
  CHECK_FALSE(a == b);
  auto c = config_value::object();
  c.set("x", config_value::integer(1));
  c.set("z", config_value::integer(2));
  CHECK_FALSE(a == c);  // same size, a key missing
  c.set("w", config_value::integer(0));
  CHECK_FALSE(a == c);  // different size
  CHECK_FALSE(config_value::object() == config_value::list());
}

TEST_CASE("value: to_text for messages") {
  CHECK(config_value{}.to_text() == "null");
  CHECK(config_value::boolean(true).to_text() == "true");
  CHECK(config_value::boolean(false).to_text() == "false");
  CHECK(config_value::integer(-3).to_text() == "-3");
  CHECK(config_value::number(0.5).to_text() == "0.5");
  CHECK(config_value::number(std::nan("")).to_text() == "nan");
  CHECK(config_value::number(INFINITY).to_text() == "inf");
  CHECK(config_value::number(-INFINITY).to_text() == "-inf");
  CHECK(config_value::string("ab").to_text() == "\"ab\"");
  const std::string long_text = config_value::string(std::string(100, 'x')).to_text();
  CHECK(long_text == "\"" + std::string(57, 'x') + "...\"");
  auto l = config_value::list();
  for (int k = 0; k < 6; ++k) l.push_back(config_value::integer(k));
  CHECK(l.to_text() == "[0, 1, 2, 3, ... (6 items)]");
  CHECK(config_value::list({config_value::integer(1), config_value::integer(2)}).to_text() == "[1, 2]");
  CHECK(config_value::object().to_text() == "{...}");
}

TEST_CASE("json: conversion limits — depth and total values are config_error naming the config") {
  // Exactly at the limits is fine.
  const auto ok = to_config_value(nlohmann::json::parse("[[1, 2], {\"a\": null}]"), 2, 6);
  CHECK(ok.size() == 2);
  CHECK(ok.items()[1].find("a")->is_null());
  auto msg = error_of([] { (void)to_config_value(nlohmann::json::parse("[[1, 2], {\"a\": null}]"), 2, 5); });
  CHECK(msg.find("config") != std::string::npos);
  CHECK(msg.find("more than 5 values") != std::string::npos);
  msg = error_of([] { (void)to_config_value(nlohmann::json::parse("[[[1]]]"), 2); });
  CHECK(msg.find("more than 2 levels") != std::string::npos);
  // The default cap: 2^20 values. A list one past it is refused before it is built.
  std::string big = "[0";
  for (std::size_t k = 1; k < max_config_values; ++k) big += ",0";
  big += "]";  // 2^20 items + the list itself
  msg = error_of([&] { (void)parse_config_json(big); });
  CHECK(msg.find("more than 1048576 values") != std::string::npos);
  // Other kinds convert as themselves (unsigned beyond int64 becomes a number).
  const auto v = to_config_value(nlohmann::json::parse(R"({"u": 18446744073709551615, "b": true, "s": "x"})"));
  CHECK(v.find("u")->is_number());
  CHECK_FALSE(v.find("u")->is_integer());
  CHECK(v.find("u")->as_number() == 18446744073709551615.0);
  CHECK(v.find("b")->as_bool());
  error_of([] { (void)to_config_value(nlohmann::json::binary({1, 2, 3})); }, "config");
}

TEST_CASE("json: 100 000 keys load; the loader reads only what it needs") {
  std::string text = R"({"model_type": "llama", "head_dim": 64, "rope_theta": 10000)";
  for (int k = 0; k < 100000; ++k) text += ",\"k" + std::to_string(k) + "\":" + std::to_string(k);
  text += "}";
  const auto m = load_hf_config_json(text);
  REQUIRE(m.rope);
  CHECK(m.rope->head_dim == 64);
  CHECK(m.warnings.empty());  // none of the keys look rotary
}
