#!/usr/bin/python3
"""Expected per-layer semantics of tests/golden/configs/conformance/*.json, computed by running
transformers' own code at the pinned commit (never needed by the test run, which reads the JSON).

For every case whose `hf` (and `hf_v5`) config belongs to a family transformers implements, this
script materialises the pinned source (git archive of the configuration_*.py / modeling_*.py files,
configuration_utils.py and modeling_rope_utils.py, with small stubs for the hub and packaging
imports), instantiates the family's configuration class on the config (class defaults, layer_types,
standardised rope_parameters), instantiates the modeling file's attention module of every layer
(its `scaling`, `sliding_window`, sinks), runs the modeling file's rotary embedding on each layer
type (inv_freq, attention_scaling) and its apply_rotary_pos_emb on unit probes (which elements pair
up: the layout), and writes `expected` (and `expected_by`) into the case. What the forward pass
decides beyond those (which layers rotate, temperatures, ALiBi) is read from the `FORWARD` table
below, each entry citing the modeling code. DeBERTa's attention module is run instead (expected_deberta: the
scale its forward divides by, its relative-table parameters). Cases marked `"expected_by": "hand"` (families
transformers does not implement) are left alone.

Run with Debian's interpreter (torch 1.13):
    /usr/bin/python3 tests/golden/gen_conformance.py [--transformers GIT_DIR] [--check] [CASE ...]
--check compares instead of writing and exits 1 on a difference.
"""

import argparse
import ast
import contextlib
import copy
import importlib
import inspect
import json
import math
import os
import re
import subprocess
import sys
import tarfile
import io
import tempfile
import textwrap
import types

import torch

COMMIT = "decba1d2"
GENERATED_BY = ("tests/golden/gen_conformance.py: transformers@decba1d2 configuration class, attention modules, rotary "
                "embedding and apply_rotary_pos_emb, run under torch " + torch.__version__.split("+")[0])
HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "configs", "conformance")
DEFAULT_REPO = "/work/.mirror/zucchini-nlp+transformers/repo"

# ------------------------------------------------------------------------------------------------
# The pinned transformers source, importable without the hub packages.

STUBS = {
    "huggingface_hub/__init__.py": "",
    "huggingface_hub/dataclasses.py": """
        import dataclasses
        def strict(cls=None, **kwargs):
            return (lambda c: c) if cls is None else cls
        def validated_field(*a, default=dataclasses.MISSING, default_factory=dataclasses.MISSING, **k):
            if default_factory is not dataclasses.MISSING:
                return dataclasses.field(default_factory=default_factory)
            return dataclasses.field(default=default)
        def as_validated_field(f):
            return f
    """,
    "transformers/__init__.py": '__version__ = "5.0.0.dev0"\n',
    "transformers/utils/__init__.py": """
        import logging as _logging
        class _Logging:
            @staticmethod
            def get_logger(name=None):
                lg = _logging.getLogger(name)
                lg.warning_once = lg.warning
                lg.info_once = lg.info
                return lg
        logging = _Logging()
        CONFIG_NAME = "config.json"
        class PushToHubMixin:
            def push_to_hub(self, *a, **k):
                raise RuntimeError("offline")
        def cached_file(*a, **k):
            raise RuntimeError("offline")
        def copy_func(f):
            return f
        def extract_commit_hash(*a, **k):
            return None
        hf_api = None
        def is_torch_available():
            return True
        def auto_docstring(obj=None, **kwargs):
            return (lambda o: o) if obj is None else obj
        def requires_backends(*a, **k):
            pass
        def __getattr__(name):
            if name.startswith("is_") and name.endswith("_available"):
                return lambda *a, **k: False
            raise AttributeError(name)
    """,
    "transformers/utils/type_validators.py": """
        import dataclasses
        def _factory(*a, **k):
            def make(default=dataclasses.MISSING, default_factory=dataclasses.MISSING, **kw):
                if default_factory is not dataclasses.MISSING:
                    return dataclasses.field(default_factory=default_factory)
                return dataclasses.field(default=default)
            return make
        def __getattr__(name):
            return _factory
    """,
    "transformers/utils/generic.py": "def is_timm_config_dict(d):\n    return False\n",
    "transformers/dynamic_module_utils.py": "def custom_object_save(*a, **k):\n    pass\n",
    "transformers/generation/__init__.py": "",
    "transformers/generation/configuration_utils.py": """
        class GenerationConfig:
            @staticmethod
            def _get_default_generation_params():
                return {}
    """,
    "transformers/modeling_gguf_pytorch_utils.py": "def load_gguf_checkpoint(*a, **k):\n    raise RuntimeError\n",
    "transformers/integrations/__init__.py": "",
    "transformers/models/__init__.py": "",
    # CSM's configuration imports AutoConfig from the module itself (the real one needs the hub)
    "transformers/models/auto/configuration_auto.py": "from . import AutoConfig, CONFIG_MAPPING\n",
    "transformers/models/auto/__init__.py": """
        import importlib
        from . import _mapping
        class _Lazy(dict):
            def __getitem__(self, model_type):
                module, name = _mapping.CLASSES[model_type]
                return getattr(importlib.import_module(module), name)
            def __contains__(self, model_type):
                return model_type in _mapping.CLASSES
        CONFIG_MAPPING = _Lazy()
        class AutoConfig:
            @staticmethod
            def for_model(model_type, **kwargs):
                return CONFIG_MAPPING[model_type](**kwargs)
    """,
}


LAZY_INIT = """
import importlib, os
def __getattr__(name):
    here = os.path.dirname(__file__)
    for fn in sorted(os.listdir(here)):
        if fn.startswith("configuration_") and fn.endswith(".py"):
            module = importlib.import_module(__name__ + "." + fn[:-3])
            if hasattr(module, name):
                return getattr(module, name)
    raise AttributeError(name)
"""


class Reference:
    """The pinned transformers source in a temporary directory, on sys.path."""

    def __init__(self, repo):
        self.root = tempfile.mkdtemp(prefix="posenc_tf_")
        archive = subprocess.check_output(
            ["git", "-C", repo, "archive", COMMIT, "--", "src/transformers/models/*/configuration_*.py",
             "src/transformers/models/*/modeling_*.py", "src/transformers/configuration_utils.py",
             "src/transformers/modeling_rope_utils.py", "src/transformers/integrations/heterogeneity"])
        with tarfile.open(fileobj=io.BytesIO(archive)) as t:
            t.extractall(self.root)
        src = os.path.join(self.root, "src")
        for rel, text in STUBS.items():
            path = os.path.join(src, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(textwrap.dedent(text))
        models = os.path.join(src, "transformers", "models")
        classes = {}
        for m in sorted(os.listdir(models)):
            d = os.path.join(models, m)
            if not os.path.isdir(d) or m == "auto":
                continue
            with open(os.path.join(d, "__init__.py"), "w") as f:  # `from ..siglip import SiglipVisionConfig`
                f.write(LAZY_INIT)
            for fn in os.listdir(d):
                if fn.startswith("configuration_") and fn.endswith(".py"):
                    for node in ast.parse(open(os.path.join(d, fn)).read()).body:
                        if not isinstance(node, ast.ClassDef):
                            continue
                        for st in node.body:
                            if (isinstance(st, ast.Assign) and any(getattr(t, "id", "") == "model_type" for t in st.targets)
                                    and isinstance(st.value, ast.Constant)):
                                classes.setdefault(st.value.value, (f"transformers.models.{m}.{fn[:-3]}", node.name))
        with open(os.path.join(models, "auto", "_mapping.py"), "w") as f:
            f.write("CLASSES = " + repr(classes) + "\n")
        self.classes = classes
        self.models = models
        sys.path.insert(0, src)

    def config_class(self, model_type):
        module, name = self.classes[model_type]
        return getattr(importlib.import_module(module), name)

    def modeling_source(self, config_class):
        module = config_class.__module__.split(".")
        path = os.path.join(self.models, module[2], module[3].replace("configuration_", "modeling_") + ".py")
        return open(path).read() if os.path.exists(path) else None


# ------------------------------------------------------------------------------------------------
# Modeling code, extracted: the rotary embedding, apply_rotary_pos_emb and the attention modules run
# on stubs of everything else (layers are never materialised).


class Dummy:
    """Stands in for any name the extracted code uses but does not need (modules, kernels, decorators)."""

    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        if len(a) == 1 and not k and (inspect.isfunction(a[0]) or inspect.isclass(a[0])):
            return a[0]  # a decorator
        return Dummy()

    def __getattr__(self, name):
        return Dummy()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __getitem__(self, key):  # annotations: Unpack[...], Optional[...]
        return Dummy()

    def __or__(self, other):  # annotations: X | None
        return Dummy()

    __ror__ = __or__


class StubNN(types.SimpleNamespace):
    Module = torch.nn.Module

    @staticmethod
    def Buffer(t, persistent=True):  # noqa: N802 (torch >= 2.5's nn.Buffer: a plain tensor here)
        return t

    def __getattr__(self, name):
        return Dummy


_register_buffer = torch.nn.Module.register_buffer


def _register_buffer_over_attribute(self, name, tensor, persistent=True):
    """StubNN.Buffer leaves a plain attribute, which longrope_frequency_update re-registers as a buffer."""
    if name in self.__dict__ and name not in self._buffers:
        del self.__dict__[name]
    return _register_buffer(self, name, tensor, persistent)


torch.nn.Module.register_buffer = _register_buffer_over_attribute


@contextlib.contextmanager
def _no_autocast(*a, **k):
    yield


def extract(source, wanted):
    """The top-level functions and the classes named by `wanted(name)` of a modeling file, executed."""
    import transformers.modeling_rope_utils as mru

    tree = ast.parse(source)
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) or (isinstance(n, ast.ClassDef) and wanted(n.name))]
    # decorators other than these are hub kernels, deprecations and docstrings: dropped
    meaningful = {"staticmethod", "classmethod", "property", "dynamic_rope_update"}
    for node in keep:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                sub.decorator_list = [d for d in sub.decorator_list
                                      if isinstance(d, ast.Name) and d.id in meaningful]
    ns = dict(math=math, torch=torch, nn=StubNN(), F=torch.nn.functional, __name__="extracted",
              ROPE_INIT_FUNCTIONS=mru.ROPE_INIT_FUNCTIONS, dynamic_rope_update=mru.dynamic_rope_update,
              maybe_autocast=_no_autocast)
    # every other free name (decorators, kernels, norms, type names) is a stand-in
    builtin = set(dir(__builtins__) if isinstance(__builtins__, types.ModuleType) else __builtins__)
    for node in keep:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id not in ns and sub.id not in builtin:
                ns[sub.id] = Dummy()
    ns["__sources__"] = {n.name: ast.get_source_segment(source, n) for n in keep if isinstance(n, ast.ClassDef)}
    for node in keep:
        try:
            exec(compile(ast.Module(body=[node], type_ignores=[]), "<extracted>", "exec"), ns)
        except Exception:
            pass
    return ns


# ------------------------------------------------------------------------------------------------
# What the forward passes decide beyond the modules' attributes (each cites the code it restates).

FORWARD = {
    # which attention layers rotate: f(config, layer index, attention module) -> bool
    "rotates": {
        "cohere2": lambda c, i, a: a.sliding_window is not None,  # modeling_cohere2.py: if self.sliding_window is not None
        # modular_cohere2_moe.py: if self.sliding_window is not None or self.force_rope
        "cohere2_moe": lambda c, i, a: a.sliding_window is not None or a.force_rope,
        "exaone4": lambda c, i, a: c.sliding_window is None or c.layer_types[i] == "sliding_attention",  # modeling_exaone4.py
        "llama4_text": lambda c, i, a: bool(c.no_rope_layers[i]),  # modeling_llama4.py: self.use_rope
        "smollm3": lambda c, i, a: bool(c.no_rope_layers[i]),  # modeling_smollm3.py: self.use_rope
        "falcon": lambda c, i, a: not c.alibi,  # modeling_falcon.py: if alibi is None: apply_rotary_pos_emb
        "afmoe": lambda c, i, a: a.is_local_attention,  # modeling_afmoe.py: if self.is_local_attention: rotate
        # modeling_exaone_moe.py: RoPE iff sliding_window is None or the layer slides
        "exaone_moe": lambda c, i, a: c.sliding_window is None or c.layer_types[i] == "sliding_attention",
        # modeling_olmo_hybrid.py: rotary_emb only when rope_parameters and its rope_theta are not None
        "olmo_hybrid": lambda c, i, a: c.rope_parameters is not None and c.rope_parameters.get("rope_theta") is not None,
        # modeling_granitemoehybrid.py: rotary_emb = ... if config.position_embedding_type == "rope" else None
        "granitemoehybrid": lambda c, i, a: c.position_embedding_type == "rope",
        "zamba2": lambda c, i, a: c.use_mem_rope,  # modeling_zamba2.py line 316: if self.config.use_mem_rope
    },
    # a layer's own base where the model builds one rotary embedding per base: f(config, layer index), 0 = NoPE
    # (modeling_granite_swa.py / modeling_granitemoe_swa.py: rotary_embs by layer_rope_theta)
    "layer_theta": {
        "granite_swa": lambda c, i: c.layer_rope_theta[i],
        "granitemoe_swa": lambda c, i: c.layer_rope_theta[i],
    },
    # the scaling name posenc gives a family's written rope_type (modeling code that reads it otherwise)
    "rope_type": {
        # modeling_hunyuan_v1_*.py: rope_type "dynamic" with an alpha is HunYuan's own alpha base
        "hunyuan_v1_dense": lambda p: "dynamic_alpha" if p.get("rope_type") == "dynamic" and p.get("alpha") else None,
        "hunyuan_v1_moe": lambda p: "dynamic_alpha" if p.get("rope_type") == "dynamic" and p.get("alpha") else None,
    },
    # the layer kind posenc reports for a hybrid's non-attention layers (the mixer its modeling file builds; HF's
    # layer_types call them all linear_attention), and "hybrid" (Falcon-H1: attention and Mamba side by side)
    "mixer": {
        "jamba": "mamba",  # modeling_jamba.py: JambaMambaMixer
        "bamba": "mamba",  # modeling_bamba.py: BambaMixer (Mamba-2)
        "granitemoehybrid": "mamba",  # modeling_granitemoehybrid.py: GraniteMoeHybridMambaLayer
        "nemotron_h": "mamba",  # modeling_nemotron_h.py: NemotronHMamba2Mixer
        "lfm2": "conv", "lfm2_moe": "conv",  # modeling_lfm2.py: Lfm2ShortConv
        "zamba": "mamba", "zamba2": "mamba",  # modeling_zamba*.py: Zamba*MambaDecoderLayer ("hybrid": attention first)
        "recurrent_gemma": "recurrent",  # modeling_recurrent_gemma.py: RecurrentGemmaRecurrentBlock (RG-LRU)
    },
    # layer types of families that name them otherwise: f(config) -> HF v5 names
    # (modeling_recurrent_gemma.py line 504: TEMPORAL_BLOCK_CLASSES[config.layers_block_type[layer_idx]])
    "layer_types": {
        # modeling_mllama.py line 1027: layer_idx in cross_attention_layers builds MllamaCrossAttentionDecoderLayer
        "mllama_text_model": lambda c: ["cross_attention" if i in c.cross_attention_layers else "full_attention"
                                        for i in range(c.num_hidden_layers)],
        "recurrent_gemma": lambda c: [{"recurrent": "recurrent", "attention": "full_attention"}[t]
                                      for t in c.layers_block_type],
    },
    # the final-logit soft-cap under another name: f(config) (modeling_recurrent_gemma.py line 771)
    "final_softcap": {"recurrent_gemma": lambda c: c.logits_soft_cap},
    # families whose attention modules decide causality (is_causal): the encoders and Gemma 3 (bidirectional
    # with use_bidirectional_attention, modeling_gemma3.py line 320); T5's modules say is_decoder (the layers counted
    # are the encoder's, modeling_t5.py T5Attention)
    "module_causality": {"bert", "roberta", "eurobert", "nomic_bert", "modernbert", "jina_embeddings_v3", "gemma3_text",
                         "t5", "umt5"},
    # the positional family of models that do not rotate: f(config)
    "positional": {
        "bloom": lambda c: "alibi",  # modeling_bloom.py: build_alibi_tensor on every layer
        "mpt": lambda c: "alibi",  # modeling_mpt.py: build_mpt_alibi_tensor, whatever attn_config says
        "falcon": lambda c: "alibi" if c.alibi else None,  # modeling_falcon.py: FalconModel.use_alibi
        "t5": lambda c: "t5_buckets",  # modeling_t5.py: relative_attention_bias
        "umt5": lambda c: "t5_buckets",  # modeling_umt5.py: relative_attention_bias in every layer
        "gpt2": lambda c: "learned",  # modeling_gpt2.py: wpe
        "gpt_bigcode": lambda c: "learned",  # modeling_gpt_bigcode.py: wpe
        "gpt_neo": lambda c: "learned",  # modeling_gpt_neo.py: wpe
        "opt": lambda c: "learned",  # modeling_opt.py: embed_positions
        "biogpt": lambda c: "learned",  # modeling_biogpt.py: embed_positions
        "bert": lambda c: "learned",  # modeling_bert.py: position_embeddings
        "roberta": lambda c: "learned",  # modeling_roberta.py: position_embeddings, padding-aware ids
        "xglm": lambda c: "sinusoidal",  # modeling_xglm.py: XGLMSinusoidalPositionalEmbedding
    },
    # ALiBi parameters of the ALiBi families: f(config) -> {max_bias, slope_scale}
    "alibi": {
        "bloom": lambda c: {"max_bias": 8.0, "slope_scale": 1.0},  # modeling_bloom.py: build_alibi_tensor, beta 1
        "mpt": lambda c: {"max_bias": 8.0, "slope_scale": 1.0},  # modeling_mpt.py: alibi_bias_max not passed: 8
        # modeling_falcon.py: the mask holds alibi / sqrt(hidden_size // num_heads)
        "falcon": lambda c: {"max_bias": 8.0, "slope_scale": (c.hidden_size // c.num_attention_heads) ** -0.5},
    },
    # query temperatures: f(config, layer index, attention module) -> bool
    "temperature": {
        # modeling_llama4.py: attn_temperature_tuning and not self.use_rope
        "llama4_text": lambda c, i, a: bool(c.attn_temperature_tuning) and not c.no_rope_layers[i],
        # modeling_ministral3.py: get_llama_4_attn_scale when rope_parameters carries llama_4_scaling_beta
        "ministral3": lambda c, i, a: "llama_4_scaling_beta" in (c.rope_parameters or {}),
        # modeling_mistral4.py: query_states *= 1 + llama_4_scaling_beta * log(1 + floor(pos / L0)), always
        "mistral4": lambda c, i, a: "llama_4_scaling_beta" in (c.rope_parameters or {}),
    },
    # softmax scales that no module attribute holds: f(config, attention module, attribute scale)
    "scale": {
        "t5": lambda c, a, s: 1.0,  # modeling_t5.py: no 1/sqrt(d) (the initialisation absorbs it)
        "umt5": lambda c, a, s: 1.0,  # modeling_umt5.py: the same
        # modeling_falcon_h1.py: k = k_proj(x * attention_in_multiplier) * key_multiplier, q = q_proj(x * in)
        "falcon_h1": lambda c, a, s: s * c.key_multiplier * c.attention_in_multiplier ** 2,
        "gpt_neo": lambda c, a, s: 1.0,  # modeling_gpt_neo.py: no division of q.k
        "modernbert": lambda c, a, s: a.head_dim ** -0.5,  # modeling_modernbert.py: the attention's default scale
    },
    # the embedding row of position 0 of the learned / sinusoidal families: f(config)
    "learned_offset": {
        "gpt2": lambda c: 0, "gpt_bigcode": lambda c: 0, "gpt_neo": lambda c: 0, "bert": lambda c: 0,
        "opt": lambda c: 2,  # modeling_opt.py: OPTLearnedPositionalEmbedding offset 2
        "biogpt": lambda c: 2,  # modeling_biogpt.py: BioGptLearnedPositionalEmbedding offset 2
        "xglm": lambda c: 2,  # modeling_xglm.py: XGLMSinusoidalPositionalEmbedding offset 2
        "roberta": lambda c: c.pad_token_id + 1,  # modeling_roberta.py: padding_idx + 1
    },
}


# ------------------------------------------------------------------------------------------------


def layout_of(ns, out, config):
    """Which input elements the modeling file's rotation pairs, probed on unit vectors at position 1: element 0
    with 1 (interleaved) or with the middle of the rotated slice (half_split). Pairs are found in the input:
    DeepSeek-V3's interleaved rotation writes its output de-interleaved (q.k is the same)."""
    if isinstance(out, tuple):
        cos, sin = out
        section = None
        if cos.dim() == 4:  # mRoPE (3, batch, seq, dim): text positions are equal in every stream
            section = (config.rope_parameters or {}).get("mrope_section")
            cos, sin = (cos, sin) if "apply_rotary_pos_emb" not in ns else (cos[0], sin[0])
        fn = ns.get("apply_rotary_pos_emb_interleave") if getattr(config, "rope_interleave", False) else None
        fn = fn or ns.get("apply_rotary_pos_emb")

        def rotate(x):
            if fn is None:
                return ns["apply_multimodal_rotary_pos_emb"](x, x, cos, sin, section)[0]
            if list(inspect.signature(fn).parameters)[:2] == ["x", "cos"]:  # Gemma 3n: one tensor at a time
                return fn(x, cos, sin)
            return fn(x, x, cos, sin)[0]

        widths = [cos.shape[-1], 2 * cos.shape[-1]]  # the rotated slice (partial rotary) or a head of half-width cos
    else:  # complex frequencies (Llama 4): view_as_complex pairs

        def rotate(x):
            return ns["apply_rotary_emb"](x, x, out)[0]

        widths = [2 * out.shape[-1]]
    for dim in widths:
        def image(j):
            x = torch.zeros(1, 1, 1, dim)
            x[..., j] = 1.0
            return {i for i, v in enumerate(rotate(x).reshape(-1).tolist()) if abs(v) > 1e-6}
        try:
            first = image(0)
        except RuntimeError:
            continue
        partners = [j for j in range(1, dim) if image(j) == first]
        return "interleaved" if partners == [1] else "half_split" if partners == [dim // 2] else f"? {partners}"
    return "?"


def pick(ns, suffix, text_model):
    """The decoder's class of a modeling file ending in `suffix` (not a vision / audio / encoder one)."""
    skip = ("Vision", "Audio", "Visual", "Cross", "Encoder", "Speech", "Image", "Patch", "Flash", "Sdpa", "Vit", "MLP")
    def own(n):  # the part of a class name after the model's own (MiMoV2Flash is not a FlashAttention class)
        return n[len(text_model):] if n.lower().startswith(text_model.lower()) else n

    names = [n for n, v in ns.items() if inspect.isclass(v) and n.endswith(suffix) and not any(s in own(n) for s in skip)]
    names.sort(key=lambda n: (text_model.lower() not in n.lower(), len(n)))
    return ns[names[0]] if names else None


def construct(cls, **kw):
    params = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in kw.items() if k in params or any(p.kind == p.VAR_KEYWORD for p in params.values())})


def rope_of(rot, layer_type, dim_guess):
    """inv_freq, attention_scaling and the rotary embedding's output at position 1 for one layer type."""
    per_type = hasattr(rot, f"{layer_type}_inv_freq")
    inv = getattr(rot, f"{layer_type}_inv_freq" if per_type else "inv_freq")
    scaling = getattr(rot, f"{layer_type}_attention_scaling" if per_type else "attention_scaling", 1.0)
    if inv.dim() == 2:  # modeling_cosmos3_edge.py: one masked row per stream (t, h, w) partitioning the pairs; text
        inv = inv.sum(0)  # positions are equal in every stream, so a pair's frequency is its row's
    x = torch.zeros(1, 1, dim_guess)
    params = inspect.signature(rot.forward).parameters
    out = None
    for pos in (torch.tensor([[1]]), torch.tensor([[[1]]] * 3)):  # text positions, mRoPE's three streams
        try:
            out = rot(x, pos, layer_type) if "layer_type" in params else rot(x, pos)
            break
        except (IndexError, RuntimeError):
            continue
    return [float(v) for v in inv.tolist()], float(scaling), out


# The softmax scale and head width under the names older modeling files use (the value, or 1 / it).
SCALE_ATTRS = [("scaling", False), ("softmax_scale", False), ("inv_norm_factor", False), ("norm_factor", True),
               ("scale_attn", True)]
HEAD_ATTRS = ["qk_head_dim", "head_dim", "head_size", "key_value_proj_dim", "attention_head_size"]
SOFTMAX_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "attention", "hybrid", "hybrid_sliding",
                 "global", "local")
# the softmax layer types of families that name them otherwise (Falcon-H1 "hybrid"; ZAYA "hybrid", "hybrid_sliding")
LAYER_TYPE_NAMES = {"hybrid": "full_attention", "attention": "full_attention", "hybrid_sliding": "sliding_attention"}
ATTENTION_TYPE = {"sliding_attention": "local", "full_attention": "global"}  # GPT-Neo's attention modules


def scale_of(attn, mt, text):
    found = None
    for module in (attn, getattr(attn, "self", None)):  # BERT keeps the scores in attention.self
        for name, inverse in SCALE_ATTRS:
            v = getattr(module, name, None)
            if found is None and isinstance(v, (int, float, torch.Tensor)) and not isinstance(v, bool):
                found = 1.0 / float(v) if inverse else float(v)
    if mt in FORWARD["scale"]:
        return FORWARD["scale"][mt](text, attn, found)
    if found is None:
        raise AttributeError(f"{type(attn).__name__}: no softmax scale attribute")
    return found


def declares(config, field):
    """True when the configuration class has the field (a key it does not declare is kept but never read)."""
    return any(field in getattr(k, "__annotations__", {}) for k in type(config).__mro__)


def causal_of(attn, mt):
    """Decoder modules build their causal mask at the model level (is_causal is not theirs to say); the
    encoder families' modules carry it."""
    if mt not in FORWARD["module_causality"]:
        return True
    for module in (attn, getattr(attn, "self", None)):
        for name in ("is_causal", "is_decoder"):
            v = getattr(module, name, None)
            if isinstance(v, bool):
                return v
    return True


def window_of(attn, text, ns, source):
    """The module's sliding_window, else what its forward passes (sliding_window=self.config.sliding_window), else
    the model's mask (create_sliding_window_causal_mask whenever config.sliding_window is set)."""
    sw = getattr(attn, "sliding_window", None)
    if isinstance(sw, int) and not isinstance(sw, bool):
        return sw
    if getattr(attn, "attention_type", None) == "local":  # GPT-Neo: all but the last window_size keys are masked
        return text.window_size
    src = ns["__sources__"].get(type(attn).__name__, "")
    if re.search(r'sliding_window\s*=\s*(getattr\(self\.config, "sliding_window"|self\.config\.sliding_window)', src):
        return getattr(text, "sliding_window", None)
    if re.search(r"create_causal_mask if self\.config\.sliding_window is None else create_sliding_window_causal_mask",
                 source):
        return getattr(text, "sliding_window", None)
    return None


def expected_for(ref, hf, fwd_rotates):
    cls = ref.config_class(hf["model_type"])
    cfg = cls(**copy.deepcopy(hf))
    text = cfg.get_text_config(decoder=True) if hasattr(cfg, "get_text_config") else cfg
    if "Attention" in type(text).__name__:  # MPT's get_text_config answers its attn_config
        text = cfg
    mt = text.model_type
    source = ref.modeling_source(type(text))
    ns = extract(source, lambda n: n.endswith("RotaryEmbedding") or n.endswith("Attention"))
    prefix = type(text).__name__.replace("TextConfig", "").replace("Config", "")
    Attn, Rot = pick(ns, "Attention", prefix), pick(ns, "RotaryEmbedding", prefix)
    n = text.num_hidden_layers
    types_ = list(getattr(text, "layer_types", None) or getattr(text, "attention_layers", None) or ["full_attention"] * n)
    if mt in FORWARD["layer_types"]:
        types_ = FORWARD["layer_types"][mt](text)
    types_ = [{"global": "full_attention", "local": "sliding_attention"}.get(t, t) for t in types_]
    rp = getattr(text, "rope_parameters", None)
    # a rope_theta given as null: no rotary embedding is built (modeling_olmo_hybrid.py: rotary_emb None)
    rot = construct(Rot, config=text) if Rot and rp and rp.get("rope_theta", 0) is not None else None
    out_layers = []
    head_dim = None
    for i in range(n):
        lt = types_[i]
        if lt not in SOFTMAX_TYPES:  # a hybrid model's mixer layer: no softmax attention, no positions
            mixer = FORWARD["mixer"].get(mt, lt) if lt in ("linear_attention", "mamba", "conv") else lt
            out_layers.append({"layer_type": mixer, "rope": False, "theta": None, "rope_type": None, "factor": None,
                               "layout": None, "rotary_dim": 0, "attention_scaling": 1.0, "window": None,
                               "chunk_size": None, "sinks": False, "softmax_scale": 0.0, "logit_softcap": None,
                               "alibi": False, "temperature": False, "causal": True})
            continue
        attn = construct(Attn, config=text, layer_idx=i, layer_id=i, embed_dim=getattr(text, "hidden_size", None),
                         num_heads=getattr(text, "num_attention_heads", None), attention_type=ATTENTION_TYPE.get(lt))
        for module in (attn, getattr(attn, "self", None), getattr(attn, "attention", None)):
            head_dim = head_dim or next(
                (int(getattr(module, h)) for h in HEAD_ATTRS if isinstance(getattr(module, h, None), int)), None)
        rotates = rot is not None and fwd_rotates.get(mt, lambda c, i, a: True)(text, i, attn)
        layer_rot, layer_theta = rot, FORWARD["layer_theta"].get(mt, lambda c, i: None)(text, i)
        if rotates and layer_theta is not None:  # the model's rotary embedding at this layer's own base
            rotates = bool(layer_theta)
            tc = copy.deepcopy(text)
            tc.rope_parameters = {**text.rope_parameters, "rope_theta": layer_theta}
            layer_rot = construct(Rot, config=tc) if rotates else None
        window = window_of(attn, text, ns, source)
        if lt == "full_attention" and window is not None:
            if declares(text, "layer_types") and text.layer_types:  # the layer types decide the mask (per layer type)
                window = None
            else:
                lt = "sliding_attention"
        k = {"layer_type": LAYER_TYPE_NAMES.get(lt, lt), "rope": bool(rotates)}
        if rotates:
            inv, m, out = rope_of(layer_rot, types_[i], head_dim)
            params = text.rope_parameters.get(types_[i], text.rope_parameters)
            if not isinstance(params, dict) or "rope_type" not in params:
                params = text.rope_parameters
            if layer_theta is not None:
                params = {**params, "rope_theta": layer_theta}
            rope_type = FORWARD["rope_type"].get(mt, lambda p: None)(params) or params.get("rope_type", "default")
            k.update(theta=float(params["rope_theta"]), rope_type=rope_type,
                     factor=params.get("factor"), layout=layout_of(ns, out, text),
                     rotary_dim=2 * len(inv), attention_scaling=m, inv_freq=inv)
        else:
            k.update(theta=None, rope_type=None, factor=None, layout=None, rotary_dim=0, attention_scaling=1.0)
        k.update(window=window,
                 chunk_size=getattr(text, "attention_chunk_size", None) if lt == "chunked_attention" else None,
                 sinks=isinstance(getattr(attn, "sinks", None), Dummy), softmax_scale=scale_of(attn, mt, text))
        cap = getattr(text, "attn_logit_softcapping", None)
        k.update(logit_softcap=float(cap) if cap is not None and hasattr(attn, "attn_logit_softcapping") else None)
        k.update(alibi=FORWARD["positional"].get(mt, lambda c: None)(text) == "alibi",
                 temperature=bool(FORWARD["temperature"].get(mt, lambda c, i, a: False)(text, i, attn)),
                 causal=causal_of(attn, mt))
        out_layers.append(k)
    if head_dim is None:  # the width of a head where no module names it
        head_dim = getattr(text, "hidden_size") // getattr(text, "num_attention_heads")
    rope = any(layer["rope"] for layer in out_layers)
    positional = "rope" if rope else FORWARD["positional"].get(mt, lambda c: "none")(text) or "none"
    final_cap = FORWARD["final_softcap"].get(mt, lambda c: getattr(c, "final_logit_softcapping", None))(text)
    return {"positional": positional, "head_dim": head_dim,
            "final_logit_softcap": float(final_cap) if final_cap is not None else None,
            "layers": out_layers, "model_type": mt, "config": text}


# ------------------------------------------------------------------------------------------------
# DeBERTa (models/deberta, models/deberta_v2): the encoder and embeddings modules are built on stubs (what
# they read from the config), the attention module is run: its forward on a short sequence, with the
# scale it divides by (scaled_size_sqrt's arguments) recorded.

DEBERTA = {"deberta": "Deberta", "deberta-v2": "DebertaV2"}


def expected_deberta(ref, hf):
    cls = ref.config_class(hf["model_type"])
    cfg = cls(**copy.deepcopy(hf))
    source = ref.modeling_source(cls)
    prefix = DEBERTA[hf["model_type"]]
    stub = extract(source, lambda n: n in (prefix + "Encoder", prefix + "Embeddings"))
    stub["nn"] = StubNN(Embedding=lambda n, d, **k: types.SimpleNamespace(num_embeddings=n))  # table sizes
    encoder, embeddings = stub[prefix + "Encoder"](cfg), stub[prefix + "Embeddings"](cfg)
    ns = extract(source, lambda n: n == "DisentangledSelfAttention")
    ns["nn"] = torch.nn  # the attention module is run: real layers
    calls = []
    measure = ns["scaled_size_sqrt"]

    def spy(layer, factor):
        calls.append((int(layer.size(-1)), int(factor)))
        return measure(layer, factor)

    ns["scaled_size_sqrt"] = spy
    torch.manual_seed(0)
    attn = ns["DisentangledSelfAttention"](cfg).eval()
    S = 5
    x = torch.randn(1, S, cfg.hidden_size)
    relative = bool(attn.relative_attention)
    rows = encoder.rel_embeddings.num_embeddings if relative else 0
    kw = {}
    if relative:
        kw["rel_embeddings"] = torch.randn(rows, cfg.hidden_size)
        if prefix == "Deberta":  # v1's forward adds the relative terms only given relative_pos
            kw["relative_pos"] = ns["build_relative_position"](x, x)
    with torch.no_grad():
        attn(x, torch.ones(1, 1, S, S), **kw)
    assert calls and all(c == calls[0] for c in calls), calls
    d, factor = calls[0]
    layer = {"layer_type": "full_attention", "rope": False, "theta": None, "rope_type": None, "factor": None,
             "layout": None, "rotary_dim": 0, "attention_scaling": 1.0, "window": None, "chunk_size": None,
             "sinks": False, "softmax_scale": 1.0 / math.sqrt(d * factor), "logit_softcap": None, "alibi": False,
             "temperature": False,
             "causal": False}  # get_attention_mask: the padding mask both ways, no causal mask
    biased = embeddings.position_embeddings is not None
    e = {"positional": "deberta_relative" if relative else "learned" if biased else "none", "head_dim": d,
         "final_logit_softcap": None, "layers": [layer] * cfg.num_hidden_layers, "model_type": cfg.model_type,
         "config": cfg}
    if biased:
        e["learned_offset"] = 0  # position_ids = arange(max_position_embeddings): row 0
    if relative:
        buckets = getattr(attn, "position_buckets", -1)
        e["deberta"] = {"c2p": "c2p" in attn.pos_att_type, "p2c": "p2c" in attn.pos_att_type,
                        "position_buckets": buckets if buckets > 0 else 0,
                        "max_relative_positions": attn.max_relative_positions, "table_rows": rows,
                        "share_att_key": bool(getattr(attn, "share_att_key", False)),
                        "norm_rel_ebd": "layer_norm" in getattr(encoder, "norm_rel_ebd", []),
                        "position_biased_input": biased}
    return e


# ------------------------------------------------------------------------------------------------
# Vision towers (a multimodal config's vision_config): the configuration class builds the vision config,
# the modeling file's vision attention module gives the head width and scale, its rotary embedding the
# angles of the patch at row 1, column 1 (the positions each model's forward takes: Pixtral's
# position_ids = h * side + w, Qwen's rot_pos_emb freqs[(h, w)].flatten, Llama 4's freqs_ci row side + 1).


def _named(ns, suffix, also=""):
    names = [n for n in ns if inspect.isclass(ns[n]) and n.endswith(suffix) and also in n]
    return ns[sorted(names, key=len)[0]]


def expected_vision(ref, hf):
    if "vision_config" not in hf:  # (a config class builds a default vision_config: not the file's)
        return None
    cfg = ref.config_class(hf["model_type"])(**copy.deepcopy(hf))
    vc = getattr(cfg, "vision_config", None)
    if vc is None:
        return None
    kind = type(vc).__name__
    ns = extract(ref.modeling_source(type(vc)), lambda n: n.endswith("RotaryEmbedding") or n.endswith("Attention"))
    if kind == "PixtralVisionConfig":  # modeling_pixtral.py
        attn, rot = ns["PixtralAttention"](vc), ns["PixtralRotaryEmbedding"](vc)
        side = vc.image_size // vc.patch_size
        angles = rot.inv_freq[side + 1][: attn.head_dim // 2]  # PixtralVisionModel: position_ids h * side + w
        tower, theta = "Pixtral", vc.rope_parameters["rope_theta"]
        shape = {"depth": vc.num_hidden_layers, "num_heads": vc.num_attention_heads, "patches_per_side": side}
    elif kind == "Llama4VisionConfig":  # modeling_llama4.py
        attn, rot = ns["Llama4VisionAttention"](vc), ns["Llama4VisionRotaryEmbedding"](vc)
        side = vc.image_size // vc.patch_size
        angles = torch.angle(rot.freqs_ci[side + 1].reshape(-1))  # patch (x 1, y 1)
        tower, theta = "Llama 4 vision", vc.rope_parameters["rope_theta"]
        shape = {"depth": vc.num_hidden_layers, "num_heads": vc.num_attention_heads, "patches_per_side": side}
    elif not any(inspect.isclass(ns[n]) and n.endswith("RotaryEmbedding") and "Vision" in n for n in ns):
        return None  # a tower without RoPE (SigLIP, Idefics3): no vision positions in the attention
    else:  # Qwen2-VL / 2.5-VL / 3-VL: VisionRotaryEmbedding(head_dim // 2) in the vision model's __init__
        attn = _named(ns, "Attention", "Vision")(vc)
        rot = _named(ns, "RotaryEmbedding", "Vision")(attn.head_dim // 2)
        try:  # the patch's (h, w) -> its angles, (h freqs, w freqs) (rot_pos_emb at this commit)
            angles = rot(torch.tensor([[1, 1]])).reshape(-1)
        except AttributeError:  # forward(seqlen): rot_pos_emb gathers freqs[pos_ids].flatten(1)
            freqs = rot(2)
            angles = torch.cat([freqs[1], freqs[1]])
        tower = {"Qwen2VLVisionConfig": "Qwen2-VL vision", "Qwen2_5_VLVisionConfig": "Qwen2.5-VL vision",
                 "Exaone4_5_VisionConfig": "EXAONE 4.5 vision"}.get(kind, "Qwen3-VL vision")
        theta = rot.theta if hasattr(rot, "theta") else 10000.0
        shape = {"depth": vc.depth, "num_heads": vc.num_heads, "spatial_merge_size": vc.spatial_merge_size,
                 "temporal_patch_size": vc.temporal_patch_size}
        if hasattr(vc, "fullatt_block_indexes"):
            shape.update(window_size=vc.window_size, fullatt_block_indexes=list(vc.fullatt_block_indexes))
        if hasattr(vc, "num_position_embeddings"):
            shape["learned_positions"] = vc.num_position_embeddings
    out = {"tower": tower, "head_dim": int(attn.head_dim), "theta": float(theta), "softmax_scale": float(attn.scaling),
           "patch_size": int(vc.patch_size), "angles_1_1": [float(a) for a in angles.tolist()]}
    out.update(shape)
    return out


def dump(case):
    """The case as the files hold it: indented, each layer kind on one line."""
    kinds = case["expected"]["kinds"]
    case["expected"]["kinds"] = [f"@KIND{i}@" for i in range(len(kinds))]
    text = json.dumps(case, indent=1)
    for i, k in enumerate(kinds):
        text = text.replace(f'"@KIND{i}@"', json.dumps(k))
    case["expected"]["kinds"] = kinds
    return text + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--transformers", default=os.environ.get("POSENC_TRANSFORMERS", DEFAULT_REPO))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    ref = Reference(args.transformers)
    status = 0
    for fn in sorted(os.listdir(CASES)):
        name = fn[:-5]
        if args.cases and name not in args.cases:
            continue
        path = os.path.join(CASES, fn)
        case = json.load(open(path))
        if "hf" not in case or case.get("expected_by", "").startswith("hand") or "hf_error" in case:
            continue
        deberta = case["hf"].get("model_type") in DEBERTA
        e = expected_deberta(ref, case["hf"]) if deberta else expected_for(ref, case["hf"], FORWARD["rotates"])
        if "hf_v5" in case:  # the v5 form must mean the same to transformers itself
            e5 = expected_for(ref, case["hf_v5"], FORWARD["rotates"])
            if e5["layers"] != e["layers"]:
                print(f"{name}: hf and hf_v5 differ in transformers itself")
                status = 1
        kinds, letters = [], ""
        for layer in e["layers"]:
            if layer not in kinds:
                kinds.append(layer)
            letters += chr(65 + kinds.index(layer))
        expected = {"positional": e["positional"], "head_dim": e["head_dim"],
                    "final_logit_softcap": e["final_logit_softcap"], "layers": letters, "kinds": kinds}
        if e["positional"] == "alibi":
            expected["alibi"] = FORWARD["alibi"][e["model_type"]](e["config"])
        if e["model_type"] in FORWARD["learned_offset"]:
            expected["learned_offset"] = FORWARD["learned_offset"][e["model_type"]](e["config"])
        for key in ("learned_offset", "deberta"):
            if key in e:
                expected[key] = e[key]
        vision = None if deberta else expected_vision(ref, case["hf"])
        if vision:
            expected["vision"] = vision
        if args.check:
            if case.get("expected") != expected:
                print(f"{name}: differs from the generated expectation")
                status = 1
            continue
        case["expected"] = expected
        case["expected_by"] = GENERATED_BY
        with open(path, "w") as f:
            f.write(dump(case))
        print(f"{name}: {e['model_type']}, {len(letters)} layers, {len(kinds)} kinds")
    sys.exit(status)


if __name__ == "__main__":
    main()
