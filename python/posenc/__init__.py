"""posenc: positional encodings for transformer attention, exact to the references that trained real
models, with a fused CPU attention and its backward (the C++ library's Python binding).

    import posenc
    rope = posenc.RoPE(head_dim=128, theta=5e5, scaling=posenc.Llama3Scaling(factor=8))
    out = posenc.attention(q, k, v, posenc.combine(rope, posenc.ALiBi(num_heads=32)), causal=True)

numpy arrays and torch CPU tensors are read in place (no copy); ``posenc.torch`` has the autograd
op and trainable encoder modules; ``python3 -m posenc.lab`` trains the length-extrapolation lab.
"""

from ._posenc import (  # noqa: F401
    ALiBi,
    ConfigError,
    CoPE,
    DeBERTa,
    DynamicNTKScaling,
    Encoder,
    ExplicitFrequencies,
    FIRE,
    FrequencyFactors,
    KERPLE,
    Llama3Scaling,
    LearnedAbsolute,
    LinearScaling,
    LongRoPEScaling,
    MRoPE,
    NoPE,
    NTKScaling,
    RoPE,
    Shaw,
    Sinusoidal,
    ShapeError,
    T5Bias,
    Temperature,
    VisionPositions,
    VisionRoPE,
    XPos,
    YaRNScaling,
    __version__,
    alibi_slopes,
    combine,
    get_num_threads,
    set_num_threads,
    t5_bucket,
    vision_frame_offsets,
    vision_segments,
    vision_window_index,
)
from ._api import (  # noqa: F401
    KVCache,
    PagedKVCache,
    attention,
    attention_backward,
    dequantize_q8_0,
    paged_attention,
    quantize_q8_0,
    sdpa,
    sdpa_backward,
)

try:
    from ._posenc import ModelConfig, load_config  # noqa: F401  (built with nlohmann-json)
except ImportError:  # pragma: no cover
    pass
