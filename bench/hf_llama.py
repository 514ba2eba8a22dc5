"""Hugging Face's LLaMA decoder layer (transformers' modeling_llama.py: eager attention, the
legacy tuple cache) ported to NumPy line by line, as users port it: ``LlamaRMSNorm`` with its
dtype round trip, ``LlamaRotaryEmbedding`` from an ``inv_freq`` buffer and position ids,
``rotate_half``, ``repeat_kv`` (grouped-query attention, ``if n_rep == 1``), the heads split
by ``(*input_shape, -1, self.head_dim)``, ``act_fn`` from ``ACT2FN`` beside a class constant,
outputs grown by ``outputs += (...)``. ``LlamaDecoderLayer.forward`` is marked
(tests/test_hf_llama.py)."""

import numpy as np

import cuvil_aot as cv


def silu(x):
    return x / (1.0 + np.exp(-x))


ACT2FN = {"silu": silu}


class Linear:
    weight: cv.f32["O", "I"]

    def __init__(self, weight):
        self.weight = weight

    def __call__(self, x):
        return x @ self.weight.T


class LlamaRMSNorm:
    weight: cv.f32["E"]
    variance_epsilon: float

    def __init__(self, weight, eps=1e-6):
        self.weight = weight
        self.variance_epsilon = eps

    def __call__(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.astype(np.float32)
        variance = np.mean(np.power(hidden_states, 2), axis=-1, keepdims=True)
        hidden_states = hidden_states * (1.0 / np.sqrt(variance + self.variance_epsilon))
        return self.weight * hidden_states.astype(input_dtype)


class LlamaRotaryEmbedding:
    inv_freq: cv.f32["F"]
    attention_scaling = 1.0

    def __init__(self, dim, base=10000.0):
        self.inv_freq = (1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32)
                                         / dim))).astype(np.float32)
        self.attention_scaling = 1.0

    def __call__(self, x, position_ids):
        inv_freq_expanded = np.broadcast_to(self.inv_freq[None, :, None].astype(np.float32),
                                            (position_ids.shape[0], self.inv_freq.shape[0], 1))
        position_ids_expanded = position_ids[:, None, :].astype(np.float32)
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(0, 2, 1)
        emb = np.concatenate((freqs, freqs), axis=-1)
        cos = np.cos(emb) * self.attention_scaling
        sin = np.sin(emb) * self.attention_scaling
        return cos.astype(x.dtype), sin.astype(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return np.concatenate((-x2, x1), axis=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    cos = np.expand_dims(cos, unsqueeze_dim)
    sin = np.expand_dims(sin, unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = np.broadcast_to(hidden_states[:, :, None, :, :],
                                    (batch, num_key_value_heads, n_rep, slen, head_dim))
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


class LlamaMLP:
    gate_proj: Linear
    up_proj: Linear
    down_proj: Linear
    act_fn = staticmethod(silu)

    def __init__(self, gate_proj, up_proj, down_proj, hidden_act="silu"):
        self.gate_proj, self.up_proj, self.down_proj = gate_proj, up_proj, down_proj
        self.act_fn = ACT2FN[hidden_act]

    def __call__(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


class LlamaAttention:
    q_proj: Linear
    k_proj: Linear
    v_proj: Linear
    o_proj: Linear
    head_dim: int
    num_key_value_groups: int
    scaling: float
    is_causal = True

    def __init__(self, q_proj, k_proj, v_proj, o_proj, num_heads, num_kv_heads):
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = q_proj, k_proj, v_proj, o_proj
        self.head_dim = q_proj.weight.shape[0] // num_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.scaling = self.head_dim ** -0.5
        self.is_causal = True

    def __call__(self, hidden_states, position_embeddings, attention_mask, past_key_value=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).reshape(hidden_shape).transpose(0, 2, 1, 3)
        key_states = self.k_proj(hidden_states).reshape(hidden_shape).transpose(0, 2, 1, 3)
        value_states = self.v_proj(hidden_states).reshape(hidden_shape).transpose(0, 2, 1, 3)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states = np.concatenate([past_key_value[0], key_states], axis=-2)
            value_states = np.concatenate([past_key_value[1], value_states], axis=-2)
        key_states_r = repeat_kv(key_states, self.num_key_value_groups)
        value_states_r = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = np.matmul(query_states, key_states_r.transpose(0, 1, 3, 2)) * self.scaling
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states_r.shape[-2]]
            attn_weights = attn_weights + causal_mask
        attn_weights = softmax(attn_weights.astype(np.float32), axis=-1).astype(query_states.dtype)
        attn_output = np.matmul(attn_weights, value_states_r)
        attn_output = attn_output.transpose(0, 2, 1, 3)
        attn_output = attn_output.reshape(*input_shape, -1)
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights, (key_states, value_states)


class LlamaDecoderLayer:
    self_attn: LlamaAttention
    mlp: LlamaMLP
    input_layernorm: LlamaRMSNorm
    post_attention_layernorm: LlamaRMSNorm
    rotary_emb: LlamaRotaryEmbedding

    def __init__(self, self_attn, mlp, input_layernorm, post_attention_layernorm, rotary_emb):
        self.self_attn, self.mlp = self_attn, mlp
        self.input_layernorm = input_layernorm
        self.post_attention_layernorm = post_attention_layernorm
        self.rotary_emb = rotary_emb

    @cv.optimize
    def forward(self, hidden_states: cv.f32["B", "T", "E"], position_ids: cv.i64["B", "T"],
                attention_mask: cv.f32["B", 1, "T", "S"] = None,
                past_key_value: tuple[cv.f32["B", "KV", "P", "D"],
                                      cv.f32["B", "KV", "P", "D"]] = None,
                output_attentions: bool = False, use_cache: bool = False):
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, self_attn_weights, present = self.self_attn(
            hidden_states=hidden_states, position_embeddings=position_embeddings,
            attention_mask=attention_mask, past_key_value=past_key_value)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        outputs = (hidden_states,)
        if output_attentions:
            outputs += (self_attn_weights,)
        if use_cache:
            outputs += (present,)
        return outputs
