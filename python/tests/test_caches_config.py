"""posenc.KVCache and posenc.PagedKVCache (decode over a cache equals attention over the same keys,
re-rotation of length-dependent RoPE, window shifts, q8_0 storage, views of the cache's memory), and
posenc.load_config (per-layer encoders and options; the report equals `posenc model --json`)."""

import json
import os
import subprocess

import numpy as np
import pytest

import posenc

rng = np.random.default_rng(5)
GOLDEN = os.environ.get("POSENC_GOLDEN", os.path.join(os.path.dirname(__file__), "../../tests/golden/configs"))


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_kv_cache_decode_equals_attention():
    B, T, Hq, H, D = 2, 20, 4, 2, 32
    enc = posenc.combine(posenc.RoPE(head_dim=D), posenc.ALiBi(num_heads=Hq))
    cache = posenc.KVCache(batch=B, kv_heads=H, head_dim=D)
    k, v = arr(B, T, H, D), arr(B, T, H, D)
    pos = np.tile(np.arange(T), B)
    assert cache.append(enc, k[:, :15], v[:, :15], np.tile(np.arange(15), B)) == "none"
    assert cache.append(enc, k[:, 15:], v[:, 15:], np.tile(np.arange(15, T), B)) == "none"
    assert cache.length == T and cache.positions.shape == (B, T)
    keys = cache.keys
    assert keys.shape == (B, T, H, D) and not keys.flags.writeable
    np.testing.assert_allclose(keys, posenc.RoPE(head_dim=D).transform_k(k.copy(), pos), rtol=0, atol=1e-6)
    q = arr(B, 1, Hq, D)
    got = cache.attend(enc, q, np.full(B, T - 1), causal=True)
    want = posenc.attention(q, k, v, enc, causal=True)
    assert np.abs(got - want).max() < 1e-5


def test_kv_cache_rerotates_a_dynamic_schedule():
    D = 16
    enc = posenc.RoPE(head_dim=D, scaling=posenc.DynamicNTKScaling(factor=2, original_max_position=8))
    cache = posenc.KVCache(kv_heads=1, head_dim=D)
    k, v = arr(1, 12, 1, D), arr(1, 12, 1, D)
    assert cache.append(enc, k[:, :6], v[:, :6], np.arange(6)) == "none"
    assert cache.append(enc, k[:, 6:], v[:, 6:], np.arange(6, 12)) == "rerotated"
    whole = posenc.KVCache(kv_heads=1, head_dim=D)
    whole.append(enc, k, v, np.arange(12))
    np.testing.assert_allclose(cache.keys, whole.keys, atol=1e-5)


def test_kv_cache_shift_window_and_refusals():
    D = 16
    rope = posenc.RoPE(head_dim=D)
    cache = posenc.KVCache(kv_heads=1, head_dim=D)
    k, v = arr(1, 10, 1, D), arr(1, 10, 1, D)
    cache.append(rope, k, v, np.arange(10))
    cache.shift_window(rope, 2, 3)
    assert cache.length == 7 and list(cache.positions[0]) == [0, 1, 2, 3, 4, 5, 6]
    kept = np.concatenate([k[:, :2], k[:, 5:]], axis=1)
    np.testing.assert_allclose(cache.keys, rope.transform_k(kept.copy(), np.arange(7)), atol=2e-5)
    biased = posenc.KVCache(kv_heads=1, head_dim=D)  # a bias encoder: only the positions move
    biased.append(posenc.ALiBi(num_heads=1), k, v, np.arange(10))
    biased.shift_window(posenc.ALiBi(num_heads=1), 2, 3)
    assert list(biased.positions[0]) == list(range(7))
    np.testing.assert_array_equal(biased.keys, np.concatenate([k[:, :2], k[:, 5:]], axis=1))
    with pytest.raises(posenc.ConfigError, match="not a rotation"):
        cache.shift_window(posenc.XPos(head_dim=D), 0, 1)
    with pytest.raises(posenc.ShapeError, match="k.dim"):
        cache.append(rope, arr(1, 1, 1, 8), arr(1, 1, 1, 8), [10])


def test_kv_cache_q8_0_and_paged_equal_contiguous():
    H, D = 2, 64
    enc = posenc.RoPE(head_dim=D)
    k, v = arr(1, 40, H, D), arr(1, 40, H, D)
    q = arr(1, 1, 4, D)
    plain = posenc.KVCache(kv_heads=H, head_dim=D)
    plain.append(enc, k, v, np.arange(40))
    want = plain.attend(enc, q, [39])
    q8 = posenc.KVCache(kv_heads=H, head_dim=D, key_type="q8_0", value_type="q8_0")
    q8.append(enc, k, v, np.arange(40))
    assert np.abs(q8.attend(enc, q, [39]) - want).max() < 0.05
    paged = posenc.PagedKVCache(kv_heads=H, head_dim=D, block_size=16, num_blocks=8)
    s = paged.add_sequence()
    paged.append(enc, s, k[:, :25], v[:, :25])
    paged.append(enc, s, k[:, 25:], v[:, 25:])
    assert paged.length(s) == 40 and len(paged.blocks(s)) == 3 and paged.free_blocks == 5
    assert np.array_equal(paged.attend(enc, [s], q), want)


GOLDEN_FILES = ["llama3_1_8b.json", "gemma3_4b.json", "gpt_oss_20b.json", "bloom_560m.json", "deepseek_v3.json"]


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_load_config_report_equals_the_cli(name):
    path = os.path.join(GOLDEN, name)
    cfg = posenc.load_config(path)
    rep = cfg.report()
    assert rep["model_type"] == cfg.model_type and len(rep["layers"]) == cfg.num_layers
    cli = os.environ.get("POSENC_CLI")
    if not cli:
        pytest.skip("the posenc CLI was not built")
    want = json.loads(subprocess.run([cli, "model", "--config", path, "--json"], check=True, capture_output=True,
                                     text=True).stdout)
    assert rep == want


def test_layer_encoders_and_options():
    cfg = posenc.load_config(os.path.join(GOLDEN, "gemma3_4b.json"))
    enc, opts = cfg.encoder(0), cfg.options(0)
    assert enc.name == "rope" and enc.head_dim == cfg.head_dim
    assert opts["causal"] and opts["window"] is not None and opts["scale"] > 0
    D, H = cfg.head_dim, 2
    q, k, v = arr(1, 8, H, D), arr(1, 8, H, D), arr(1, 8, H, D)
    out = posenc.attention(q, k, v, enc, **opts)
    assert out.shape == (1, 8, H, D)
    with pytest.raises(posenc.ConfigError, match="layer"):
        cfg.options(10 ** 6)
    with pytest.raises(posenc.ConfigError):
        posenc.load_config(os.path.join(GOLDEN, "does-not-exist.json"))


def test_unknown_model_type_needs_generic(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "my_new_model", "hidden_size": 256, "num_attention_heads": 4,
                             "num_hidden_layers": 2, "rope_theta": 10000.0}))
    with pytest.raises(posenc.ConfigError, match="my_new_model"):
        posenc.load_config(str(p))
    cfg = posenc.load_config(str(p), generic=True)
    assert cfg.num_layers == 2 and cfg.encoder(0).name == "rope"


def test_deberta_and_vision_sections(tmp_path):
    conformance = os.path.join(GOLDEN, "conformance")
    for name, section in (("deberta_v3_base.json", "deberta"), ("pixtral_12b.json", "vision")):
        p = tmp_path / name
        p.write_text(json.dumps(json.load(open(os.path.join(conformance, name)))["hf"]))
        cfg = posenc.load_config(str(p))
        assert getattr(cfg, section) == cfg.report()[section]
        cli = os.environ.get("POSENC_CLI")
        if cli:  # the report is what `posenc model --json` prints, these sections included
            out = subprocess.run([cli, "model", "--config", str(p), "--json"], check=True, capture_output=True, text=True)
            assert cfg.report() == json.loads(out.stdout)
    assert cfg.vision["convention"] == "pixtral" and cfg.vision["patches_per_side"] == 64 and cfg.deberta is None
    deb = posenc.load_config(str(tmp_path / "deberta_v3_base.json"))
    assert deb.deberta["buckets"] == "log" and deb.deberta["table_rows"] == 512 and deb.vision is None
    with pytest.raises(posenc.ConfigError, match="deberta_relative"):
        deb.encoder(0)  # the relative tables are the model's weights
    assert deb.options(0)["causal"] is False
