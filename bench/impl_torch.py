"""The models in PyTorch, run eagerly or through ``torch.compile`` (CPU, float32)."""

import torch
import torch.nn.functional as F

torch.set_grad_enabled(False)


def matmul_relu(x, w, b):
    return torch.relu(x @ w + b)


def lstm_step(x, h, c, wx, wh, b):
    gi, gf, gg, go = (x @ wx + h @ wh + b).chunk(4, dim=1)
    c2 = torch.sigmoid(gf) * c + torch.sigmoid(gi) * torch.tanh(gg)
    return torch.sigmoid(go) * torch.tanh(c2), c2


def resnet_head(fmap, w, b):
    return torch.softmax(fmap.mean(dim=(2, 3)) @ w + b, dim=1)


def ffn_block(x, g, beta, w1, b1, w2, b2):
    h = F.layer_norm(x, (x.shape[-1],), g, beta, eps=1e-5)
    return x + F.gelu(h @ w1 + b1, approximate="tanh") @ w2 + b2


def elementwise_chain(x, y):
    return torch.tanh(x * 0.5 + y) * torch.sigmoid(y) - x.abs() * 0.25


def softmax(x):
    return torch.softmax(x, dim=-1)


def add(x, y):
    return x + y


def build(model: str, compiled: bool):
    fn = globals()[model]
    return torch.compile(fn, dynamic=False) if compiled else fn
