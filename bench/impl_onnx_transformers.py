"""bench/transformer_models.py's models as ONNX graphs built with ``onnx.helper``, run by ONNX
Runtime, in two forms:

- plain: standard ONNX ops (opset 17), as an exporter writes them; ORT's own session
  optimizations (level ALL, the default) still rewrite what they recognise;
- fused: the graph ``onnxruntime.transformers.optimizer`` makes of such a model, built
  directly with ORT's contrib ops (domain com.microsoft): Attention with a packed QKV
  weight (768, 2304) and the padding mask as mask_index, SkipLayerNormalization, BiasGelu
  (erf GELU) or FastGelu (tanh GELU); the GPT-2 decode step's attention is
  MultiHeadAttention with past_key / past_value. (The optimizer itself only matches the
  exact graph torch.onnx exports, and imports torch.)

The weights are initializers (constants), as in a deployed model, which lets ORT prepack
them; only the activations (x, the mask, the KV cache) are fed per call. A session uses
``os.cpu_count()`` intra-op threads; ``CUVIL_BENCH_ORT_SPINNING=0`` sets
``session.intra_op.allow_spinning`` to "0" (idle ORT threads then sleep instead of spinning;
each measurement runs in a fresh process, so spinning threads slow no other competitor).
"""

import math
import os

import numpy as np
import onnx
import onnxruntime as ort
from impl_onnx import Graph, _gelu
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
D, HEADS, HEAD = 768, 12, 64
BERT_EPS, GPT2_EPS = 1e-12, 1e-5


class TGraph(Graph):
    """Graph with weight initializers, int64 constants and nodes of several outputs."""

    def weight(self, array: np.ndarray) -> str:
        name = f"w{len(self.consts)}"
        self.consts.append(numpy_helper.from_array(np.ascontiguousarray(array, np.float32), name))
        return name

    def ints(self, *values: int) -> str:
        name = f"i{len(self.consts)}"
        self.consts.append(numpy_helper.from_array(np.array(values, np.int64), name))
        return name

    def node(self, kind: str, args: list[str], used: list[bool], **attrs) -> list[str]:
        """A node whose outputs are named where ``used`` (else left out, "")."""
        outs = [f"t{len(self.nodes)}_{k}" if u else "" for k, u in enumerate(used)]
        self.nodes.append(helper.make_node(kind, args, outs, **attrs))
        return outs

    def linear(self, x: str, w_in_out: np.ndarray, b: np.ndarray) -> str:
        return self.op("Add", self.op("MatMul", x, self.weight(w_in_out)), self.weight(b))

    def model(self, outputs: list[str], shapes) -> onnx.ModelProto:
        proto = super().model(outputs, shapes)
        proto.opset_import.append(helper.make_opsetid(MS, 1))
        return proto


# --- plain: standard ops ----------------------------------------------------------------


def _heads(g: TGraph, t: str, perm: list[int]) -> str:
    return g.op("Transpose", g.op("Reshape", t, g.ints(0, 0, HEADS, HEAD)), perm=perm)


def _merge(g: TGraph, a: str) -> str:
    return g.op("Reshape", g.op("Transpose", a, perm=[0, 2, 1, 3]), g.ints(0, 0, D))


def _attention(g: TGraph, q: str, k_t: str, v: str, bias: str | None) -> str:
    """softmax(q k^T / 8 + bias) v, heads merged; k_t is (B, H, 64, S)."""
    s = g.op("Mul", g.op("MatMul", q, k_t), g.const(HEAD ** -0.5))
    if bias is not None:
        s = g.op("Add", s, bias)
    return _merge(g, g.op("MatMul", g.op("Softmax", s, axis=-1), v))


def _gelu_erf(g: TGraph, v: str) -> str:
    e = g.op("Erf", g.op("Mul", v, g.const(1 / math.sqrt(2.0))))
    return g.op("Mul", g.op("Mul", g.const(0.5), v), g.op("Add", g.const(1.0), e))


def _ln(g: TGraph, x: str, gamma: np.ndarray, beta: np.ndarray, eps: float) -> str:
    return g.op("LayerNormalization", x, g.weight(gamma), g.weight(beta), axis=-1,
                epsilon=eps)


def bert_plain(g: TGraph, x: str, bias: str, w: list[np.ndarray], tanh: bool) -> str:
    wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2 = w
    q = _heads(g, g.linear(x, wq.T, bq), [0, 2, 1, 3])
    k_t = _heads(g, g.linear(x, wk.T, bk), [0, 2, 3, 1])
    v = _heads(g, g.linear(x, wv.T, bv), [0, 2, 1, 3])
    a = _ln(g, g.op("Add", x, g.linear(_attention(g, q, k_t, v, bias), wo.T, bo)), g1, b1,
            BERT_EPS)
    h = g.linear(a, wi.T, bi)
    f = g.linear(_gelu(g, h) if tanh else _gelu_erf(g, h), wf.T, bf)
    return _ln(g, g.op("Add", a, f), g2, b2, BERT_EPS)


def _mask_bias(g: TGraph, mask: str) -> str:
    m = g.op("Unsqueeze", mask, g.ints(1, 2))  # (B, 1, 1, T)
    return g.op("Mul", g.op("Sub", g.const(1.0), m), g.const(-10000.0))


def _gpt2_qkv(g: TGraph, x: str, w: list[np.ndarray]) -> tuple[str, str, str]:
    h = _ln(g, x, w[0], w[1], GPT2_EPS)
    return g.op("Split", g.linear(h, w[2], w[3]), axis=-1, n_out=3)


def _gpt2_rest_plain(g: TGraph, x: str, a: str, w: list[np.ndarray]) -> str:
    w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out = w[4:]
    x1 = g.op("Add", x, g.linear(a, w_proj, b_proj))
    f = _gelu(g, g.linear(_ln(g, x1, ln2_g, ln2_b, GPT2_EPS), w_fc, b_fc))
    return g.op("Add", x1, g.linear(f, w_out, b_out))


def gpt2_plain(g: TGraph, x: str, w: list[np.ndarray], t: int) -> str:
    q, k, v = _gpt2_qkv(g, x, w)
    causal = g.weight(np.triu(np.full((t, t), -1e9, np.float32), k=1))
    a = _attention(g, _heads(g, q, [0, 2, 1, 3]), _heads(g, k, [0, 2, 3, 1]),
                   _heads(g, v, [0, 2, 1, 3]), causal)
    return _gpt2_rest_plain(g, x, a, w)


def decode_plain(g: TGraph, x: str, k_past: str, v_past: str, w: list[np.ndarray]):
    q, k, v = _gpt2_qkv(g, x, w)
    k_all = g.op("Concat", k_past, _heads(g, k, [0, 2, 1, 3]), axis=2)
    v_all = g.op("Concat", v_past, _heads(g, v, [0, 2, 1, 3]), axis=2)
    a = _attention(g, _heads(g, q, [0, 2, 1, 3]), g.op("Transpose", k_all, perm=[0, 1, 3, 2]),
                   v_all, None)
    return [_gpt2_rest_plain(g, x, a, w), k_all, v_all]


# --- fused: ORT's contrib ops -----------------------------------------------------------


def bert_fused(g: TGraph, x: str, mask_i: str, w: list[np.ndarray], tanh: bool) -> str:
    wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2 = w
    qkv_w = g.weight(np.concatenate([wq.T, wk.T, wv.T], axis=1))  # (768, 2304)
    qkv_b = g.weight(np.concatenate([bq, bk, bv]))
    att = g.op("Attention", x, qkv_w, qkv_b, mask_i, domain=MS, num_heads=HEADS)
    a = g.op("SkipLayerNormalization", g.op("MatMul", att, g.weight(wo.T)), x, g.weight(g1),
             g.weight(b1), g.weight(bo), domain=MS, epsilon=BERT_EPS)
    h = g.op("FastGelu" if tanh else "BiasGelu", g.op("MatMul", a, g.weight(wi.T)),
             g.weight(bi), domain=MS)
    return g.op("SkipLayerNormalization", g.op("MatMul", h, g.weight(wf.T)), a, g.weight(g2),
                g.weight(b2), g.weight(bf), domain=MS, epsilon=BERT_EPS)


def _gpt2_rest_fused(g: TGraph, x: str, a: str, w: list[np.ndarray]) -> str:
    w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out = w[4:]
    h, _, _, x1 = g.node("SkipLayerNormalization",
                         [g.op("MatMul", a, g.weight(w_proj)), x, g.weight(ln2_g),
                          g.weight(ln2_b), g.weight(b_proj)],
                         [True, False, False, True], domain=MS, epsilon=GPT2_EPS)
    f = g.op("FastGelu", g.op("MatMul", h, g.weight(w_fc)), g.weight(b_fc), domain=MS)
    return g.op("Add", x1, g.linear(f, w_out, b_out))


def gpt2_fused(g: TGraph, x: str, w: list[np.ndarray]) -> str:
    h = _ln(g, x, w[0], w[1], GPT2_EPS)
    a = g.op("Attention", h, g.weight(w[2]), g.weight(w[3]), domain=MS, num_heads=HEADS,
             unidirectional=1)
    return _gpt2_rest_fused(g, x, a, w)


def decode_fused(g: TGraph, x: str, k_past: str, v_past: str, w: list[np.ndarray]):
    h = _ln(g, x, w[0], w[1], GPT2_EPS)
    q, k, v = g.op("Split", g.op("MatMul", h, g.weight(w[2])), axis=-1, n_out=3)
    a, k_all, v_all = g.node("MultiHeadAttention",
                             [q, k, v, g.weight(w[3]), "", "", k_past, v_past],
                             [True, True, True], domain=MS, num_heads=HEADS)
    return [_gpt2_rest_fused(g, x, a, w), k_all, v_all]


# --- the models -------------------------------------------------------------------------


def _bert_layers(g: TGraph, mask: str, weights: list[np.ndarray], fused: bool, tanh: bool):
    """Every 16 weights a layer: one graph for bert_layer and for bert_stack's loop."""
    m = g.op("Cast", mask, to=TensorProto.INT32) if fused else _mask_bias(g, mask)
    x = "x"
    for i in range(0, len(weights), 16):
        layer = bert_fused if fused else bert_plain
        x = layer(g, x, m, weights[i:i + 16], tanh)
    return [x]


def decode_into(g: TGraph, weights: list[np.ndarray], t: int) -> list[str]:
    """gpt2_decode_inplace in standard ops: the decode graph on positions 0..t-1 of the
    caches as the past (a graph writes no input: the grown caches it makes are unused)."""
    k_past, v_past = (g.op("Slice", c, g.ints(0), g.ints(t), g.ints(2))
                      for c in ("k_cache", "v_cache"))
    return decode_plain(g, "x", k_past, v_past, weights)[:1]


def decode_into_fused(g: TGraph, w: list[np.ndarray]) -> list[str]:
    """gpt2_decode_inplace as ORT serves it: GroupQueryAttention (as many K/V heads as
    query heads) on the caches as past_key / past_value, whose present outputs the run
    binds to the same buffers (``past_present_share_buffer``): the new key and value are
    written at position seqlens_k, nothing copied."""
    h = _ln(g, "x", w[0], w[1], GPT2_EPS)
    q, k, v = g.op("Split", g.linear(h, w[2], w[3]), axis=-1, n_out=3)
    a, k_all, v_all = g.node("GroupQueryAttention",
                             [q, k, v, "k_cache", "v_cache", "seqlens_k", "total_len"],
                             [True, True, True], domain=MS, num_heads=HEADS,
                             kv_num_heads=HEADS)
    return [_gpt2_rest_fused(g, "x", a, w), k_all, v_all]


def graph(model: str, g: TGraph, weights: list[np.ndarray], x_shape, fused: bool,
          ints: dict[str, int]) -> list[str]:
    if model in ("bert_layer", "bert_layer_tanh", "bert_stack"):
        return _bert_layers(g, "mask", weights, fused, model == "bert_layer_tanh")
    if model == "gpt2_block":
        return [gpt2_fused(g, "x", weights) if fused else gpt2_plain(g, "x", weights,
                                                                     x_shape[1])]
    if model == "gpt2_decode":
        return (decode_fused if fused else decode_plain)(g, "x", "k_past", "v_past", weights)
    if model == "gpt2_decode_inplace":
        return decode_into(g, weights, ints["t"])
    raise ValueError(f"no ONNX graph for {model!r}")


def session_options() -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.intra_op_num_threads = os.cpu_count() or 1
    spinning = os.environ.get("CUVIL_BENCH_ORT_SPINNING", "")
    if spinning:
        so.add_session_config_entry("session.intra_op.allow_spinning", spinning)
    return so


def build(model: str, names: list[str], arrays: tuple[np.ndarray, ...], out_shapes,
          n_weights: int, fused: bool):
    """A function of all the case's arguments running the graph; the last ``n_weights``
    arrays are baked into it as initializers (and ignored by the call), and so are the
    ints among the others (constants of the graph)."""
    n = len(arrays) - n_weights
    if model == "gpt2_decode_inplace" and fused:
        return _in_place(arrays[:n], list(arrays[n:]), out_shapes[0])
    fed = [i for i in range(n) if isinstance(arrays[i], np.ndarray)]
    ints = {names[i]: arrays[i] for i in range(n) if i not in fed}
    g = TGraph([names[i] for i in fed], tuple(arrays[i] for i in fed))
    proto = g.model(graph(model, g, list(arrays[n:]), arrays[0].shape, fused, ints),
                    out_shapes)
    onnx.checker.check_model(proto)
    sess = ort.InferenceSession(proto.SerializeToString(), session_options(),
                                providers=["CPUExecutionProvider"])
    feed_names = [names[i] for i in fed]

    def run(*args: np.ndarray):
        return sess.run(None, {name: args[i] for name, i in zip(feed_names, fed)})

    return run


def _in_place(args: tuple, weights: list[np.ndarray], out_shape):
    """decode_into_fused bound to the case's own arrays (x, k_cache, v_cache, t): the
    caches as both past and present, so ORT writes them where cuvil_aot does."""
    x, k_cache, v_cache, t = args
    b = x.shape[0]
    g = TGraph(["x", "k_cache", "v_cache"], (x, k_cache, v_cache))
    g.inputs += [helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [b]),
                 helper.make_tensor_value_info("total_len", TensorProto.INT32, [])]
    outs = decode_into_fused(g, weights)
    proto = g.model(outs, [out_shape, k_cache.shape, v_cache.shape])
    onnx.checker.check_model(proto)
    sess = ort.InferenceSession(proto.SerializeToString(), session_options(),
                                providers=["CPUExecutionProvider"])
    io = sess.io_binding()
    value = ort.OrtValue.ortvalue_from_numpy
    caches = value(k_cache), value(v_cache)  # the arrays' own memory
    for name, v in (("x", value(x)), ("k_cache", caches[0]), ("v_cache", caches[1]),
                    ("seqlens_k", value(np.full(b, t, np.int32))),
                    ("total_len", value(np.array(t + 1, np.int32)))):
        io.bind_ortvalue_input(name, v)
    result = np.empty(out_shape, np.float32)
    for name, v in zip(outs, (value(result), *caches)):
        io.bind_ortvalue_output(name, v)

    def run(*_: object):
        sess.run_with_iobinding(io)
        return result

    return run
