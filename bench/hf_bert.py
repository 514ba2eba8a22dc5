"""Hugging Face's BERT encoder (transformers' modeling_bert.py: eager attention, an encoder,
no cross-attention) ported to NumPy line by line, as users port it: ``Linear`` with (out, in)
weights, ``transpose_for_scores``, ``position_embedding_type == "absolute"`` and
``is_decoder`` attributes that __init__ sets to the class's values (constants of the
compiled code), the activation such an attribute holding a function,
``apply_chunking_to_forward`` called with a bound method, ``head_mask`` indexed per layer
or None, the outputs a tuple of what is not None; ``BertModel``: the embeddings from buffers
of position ids and token types sliced by the length (``hasattr``), the extended mask, the
pooler. ``BertEncoder.forward`` and ``BertModel.forward`` are marked (tests/test_hf_bert.py,
bench/class_hf_bert.py)."""

import math

import numpy as np
from scipy.special import erf

import cuvil_aot as cv


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def gelu(x):  # transformers' GELUActivation: the erf form
    return x * 0.5 * (1.0 + erf(x / math.sqrt(2.0)))


ACT2FN = {"gelu": gelu}


def apply_chunking_to_forward(forward_fn, chunk_size, chunk_dim, *input_tensors):
    if chunk_size > 0:
        num_chunks = input_tensors[0].shape[chunk_dim] // chunk_size
        input_tensors_chunks = tuple(np.split(t, num_chunks, axis=chunk_dim)
                                     for t in input_tensors)
        output_chunks = tuple(forward_fn(*chunk) for chunk in zip(*input_tensors_chunks))
        return np.concatenate(output_chunks, axis=chunk_dim)
    return forward_fn(*input_tensors)


class Linear:
    weight: cv.f32["O", "I"]
    bias: cv.f32["O"]

    def __init__(self, weight, bias):
        self.weight, self.bias = weight, bias

    def __call__(self, x):
        return x @ self.weight.T + self.bias


class LayerNorm:
    weight: cv.f32["E"]
    bias: cv.f32["E"]
    eps: float

    def __init__(self, weight, bias, eps=1e-12):
        self.weight, self.bias, self.eps = weight, bias, eps

    def __call__(self, x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.weight + self.bias


class BertSelfAttention:
    query: Linear
    key: Linear
    value: Linear
    num_attention_heads: int
    attention_head_size: int
    all_head_size: int
    position_embedding_type = "absolute"  # the config's, as constants of the compiled code
    is_decoder = False

    def __init__(self, query, key, value, num_attention_heads):
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = int(query.weight.shape[0] / num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query, self.key, self.value = query, key, value
        self.position_embedding_type = "absolute"
        self.is_decoder = False

    def transpose_for_scores(self, x):
        new_x_shape = x.shape[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.reshape(new_x_shape)
        return x.transpose(0, 2, 1, 3)

    def __call__(self, hidden_states, attention_mask=None, head_mask=None,
                 encoder_hidden_states=None, encoder_attention_mask=None, past_key_value=None,
                 output_attentions=False):
        mixed_query_layer = self.query(hidden_states)
        is_cross_attention = encoder_hidden_states is not None
        if is_cross_attention and past_key_value is not None:
            key_layer = past_key_value[0]
            value_layer = past_key_value[1]
            attention_mask = encoder_attention_mask
        elif is_cross_attention:
            key_layer = self.transpose_for_scores(self.key(encoder_hidden_states))
            value_layer = self.transpose_for_scores(self.value(encoder_hidden_states))
            attention_mask = encoder_attention_mask
        elif past_key_value is not None:
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
            key_layer = np.concatenate([past_key_value[0], key_layer], axis=2)
            value_layer = np.concatenate([past_key_value[1], value_layer], axis=2)
        else:
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        if self.is_decoder:
            past_key_value = (key_layer, value_layer)
        attention_scores = np.matmul(query_layer, key_layer.swapaxes(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = softmax(attention_scores, axis=-1)
        if head_mask is not None:
            attention_probs = attention_probs * head_mask
        context_layer = np.matmul(attention_probs, value_layer)
        context_layer = context_layer.transpose(0, 2, 1, 3)
        new_context_layer_shape = context_layer.shape[:-2] + (self.all_head_size,)
        context_layer = context_layer.reshape(new_context_layer_shape)
        outputs = (context_layer, attention_probs) if output_attentions else (context_layer,)
        if self.is_decoder:
            outputs = outputs + (past_key_value,)
        return outputs


class BertSelfOutput:
    dense: Linear
    LayerNorm: LayerNorm

    def __init__(self, dense, layer_norm):
        self.dense, self.LayerNorm = dense, layer_norm

    def __call__(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertAttention:
    self: BertSelfAttention
    output: BertSelfOutput

    def __init__(self, self_attention, output):
        self.self, self.output = self_attention, output

    def __call__(self, hidden_states, attention_mask=None, head_mask=None,
                 encoder_hidden_states=None, encoder_attention_mask=None, past_key_value=None,
                 output_attentions=False):
        self_outputs = self.self(hidden_states, attention_mask, head_mask, encoder_hidden_states,
                                 encoder_attention_mask, past_key_value, output_attentions)
        attention_output = self.output(self_outputs[0], hidden_states)
        outputs = (attention_output,) + self_outputs[1:]
        return outputs


class BertIntermediate:
    dense: Linear
    intermediate_act_fn = staticmethod(gelu)

    def __init__(self, dense, hidden_act="gelu"):
        self.dense = dense
        self.intermediate_act_fn = ACT2FN[hidden_act]

    def __call__(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        return hidden_states


class BertOutput:
    dense: Linear
    LayerNorm: LayerNorm

    def __init__(self, dense, layer_norm):
        self.dense, self.LayerNorm = dense, layer_norm

    def __call__(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertLayer:
    attention: BertAttention
    intermediate: BertIntermediate
    output: BertOutput
    chunk_size_feed_forward = 0
    seq_len_dim = 1
    is_decoder = False

    def __init__(self, attention, intermediate, output):
        self.chunk_size_feed_forward = 0
        self.seq_len_dim = 1
        self.attention = attention
        self.is_decoder = False
        self.intermediate = intermediate
        self.output = output

    def __call__(self, hidden_states, attention_mask=None, head_mask=None,
                 encoder_hidden_states=None, encoder_attention_mask=None, past_key_value=None,
                 output_attentions=False):
        self_attn_past_key_value = past_key_value[:2] if past_key_value is not None else None
        self_attention_outputs = self.attention(hidden_states, attention_mask, head_mask,
                                                output_attentions=output_attentions,
                                                past_key_value=self_attn_past_key_value)
        attention_output = self_attention_outputs[0]
        if self.is_decoder:
            outputs = self_attention_outputs[1:-1]
            present_key_value = self_attention_outputs[-1]
        else:
            outputs = self_attention_outputs[1:]
        layer_output = apply_chunking_to_forward(self.feed_forward_chunk,
                                                 self.chunk_size_feed_forward, self.seq_len_dim,
                                                 attention_output)
        outputs = (layer_output,) + outputs
        if self.is_decoder:
            outputs = outputs + (present_key_value,)
        return outputs

    def feed_forward_chunk(self, attention_output):
        intermediate_output = self.intermediate(attention_output)
        layer_output = self.output(intermediate_output, attention_output)
        return layer_output


class BertEncoder:
    layer: [BertLayer] * 2

    def __init__(self, layers):
        self.layer = layers

    @cv.optimize
    def forward(self, hidden_states: cv.f32["B", "T", "E"],
                attention_mask: cv.f32["B", 1, 1, "T"] = None,
                head_mask: cv.f32["L", "B", "H", "T", "T"] = None,
                output_attentions: bool = False, output_hidden_states: bool = False):
        all_hidden_states = () if output_hidden_states else None
        all_self_attentions = () if output_attentions else None
        for i, layer_module in enumerate(self.layer):
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            layer_head_mask = head_mask[i] if head_mask is not None else None
            layer_outputs = layer_module(hidden_states, attention_mask, layer_head_mask,
                                         None, None, None, output_attentions)
            hidden_states = layer_outputs[0]
            if output_attentions:
                all_self_attentions = all_self_attentions + (layer_outputs[1],)
        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)
        return tuple(v for v in [hidden_states, None, all_hidden_states, all_self_attentions,
                                 None] if v is not None)


class Embedding:
    weight: cv.f32["N", "E"]

    def __init__(self, weight):
        self.weight = weight

    def __call__(self, ids):
        return self.weight[ids]


class BertEmbeddings:
    word_embeddings: Embedding
    position_embeddings: Embedding
    token_type_embeddings: Embedding
    LayerNorm: LayerNorm
    position_ids: cv.i64[1, "P"]
    token_type_ids: cv.i64[1, "P"]
    position_embedding_type = "absolute"

    def __init__(self, word_embeddings, position_embeddings, token_type_embeddings, layer_norm):
        self.word_embeddings = word_embeddings
        self.position_embeddings = position_embeddings
        self.token_type_embeddings = token_type_embeddings
        self.LayerNorm = layer_norm
        max_position_embeddings = position_embeddings.weight.shape[0]
        self.position_embedding_type = "absolute"
        self.position_ids = np.arange(max_position_embeddings).reshape(1, -1)
        self.token_type_ids = np.zeros(self.position_ids.shape, dtype=np.int64)

    def __call__(self, input_ids=None, token_type_ids=None, position_ids=None,
                 inputs_embeds=None, past_key_values_length=0):
        if input_ids is not None:  # noqa: SIM108 - as transformers writes it
            input_shape = input_ids.shape
        else:
            input_shape = inputs_embeds.shape[:-1]
        seq_length = input_shape[1]
        if position_ids is None:
            position_ids = self.position_ids[:, past_key_values_length:seq_length
                                             + past_key_values_length]
        if token_type_ids is None:
            if hasattr(self, "token_type_ids"):
                buffered_token_type_ids = self.token_type_ids[:, :seq_length]
                buffered_token_type_ids_expanded = np.broadcast_to(
                    buffered_token_type_ids, (input_shape[0], seq_length))
                token_type_ids = buffered_token_type_ids_expanded
            else:
                token_type_ids = np.zeros(input_shape, dtype=np.int64)
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        if self.position_embedding_type == "absolute":
            position_embeddings = self.position_embeddings(position_ids)
            embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        return embeddings


class BertPooler:
    dense: Linear

    def __init__(self, dense):
        self.dense = dense

    def __call__(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        pooled_output = self.dense(first_token_tensor)
        pooled_output = np.tanh(pooled_output)
        return pooled_output


class BertModel:
    embeddings: BertEmbeddings
    encoder: BertEncoder
    pooler: BertPooler

    def __init__(self, embeddings, encoder, pooler):
        self.embeddings, self.encoder, self.pooler = embeddings, encoder, pooler

    def get_extended_attention_mask(self, attention_mask, input_shape, dtype=np.float32):
        extended_attention_mask = attention_mask[:, None, None, :]
        extended_attention_mask = extended_attention_mask.astype(dtype)
        extended_attention_mask = (1.0 - extended_attention_mask) * np.finfo(dtype).min
        return extended_attention_mask

    @cv.optimize
    def forward(self, input_ids: cv.i64["B", "T"], attention_mask: cv.i64["B", "T"] = None,
                token_type_ids: cv.i64["B", "T"] = None):
        input_shape = input_ids.shape
        batch_size, seq_length = input_shape
        if attention_mask is None:
            attention_mask = np.ones((batch_size, seq_length))
        extended_attention_mask = self.get_extended_attention_mask(attention_mask, input_shape)
        embedding_output = self.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        encoder_outputs = self.encoder.forward(embedding_output,
                                               attention_mask=extended_attention_mask)
        sequence_output = encoder_outputs[0]
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
        return (sequence_output, pooled_output) + encoder_outputs[1:]
