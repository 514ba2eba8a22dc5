"""The models with numexpr for the elementwise parts; NumPy does matmuls and reductions.

Constants are float32 scalars: a Python float literal makes numexpr compute in float64.
"""

import numexpr as ne
import numpy as np

F = np.float32
SIG = "(1 / (1 + exp(-{})))"
GELU = "half * v * (1 + tanh(k0 * (v + k1 * v * v * v)))"


def ev(expr: str, **names):
    return ne.evaluate(expr, local_dict=names)


def matmul_relu(x, w, b):
    return ev("where(t + b > 0, t + b, 0)", t=x @ w, b=b)


def lstm_step(x, h, c, wx, wh, b):
    gates = ev("xw + hw + b", xw=x @ wx, hw=h @ wh, b=b)
    n = h.shape[1]
    gi, gf, gg, go = (gates[:, k * n:(k + 1) * n] for k in range(4))
    c2 = ev(f"{SIG.format('gf')} * c + {SIG.format('gi')} * tanh(gg)", gf=gf, gi=gi, gg=gg, c=c)
    return ev(f"{SIG.format('go')} * tanh(c2)", go=go, c2=c2), c2


def _softmax_rows(t):
    e = ev("exp(t - m)", t=t, m=t.max(axis=1, keepdims=True))
    return ev("e / s", e=e, s=e.sum(axis=1, keepdims=True))


def resnet_head(fmap, w, b):
    return _softmax_rows(ev("t + b", t=fmap.mean(axis=(2, 3)) @ w, b=b))


def ffn_block(x, g, beta, w1, b1, w2, b2):
    hn = ev("(x - mu) / sqrt(var + eps) * g + beta", x=x, mu=x.mean(axis=-1, keepdims=True),
            var=x.var(axis=-1, keepdims=True), eps=F(1e-5), g=g, beta=beta)
    a = ev(GELU, v=ev("t + b1", t=hn @ w1, b1=b1), half=F(0.5), k0=F(0.7978845608028654),
           k1=F(0.044715))
    return ev("x + y + b2", x=x, y=a @ w2, b2=b2)


def elementwise_chain(x, y):
    return ev(f"tanh(x * half + y) * {SIG.format('y')} - abs(x) * quarter", x=x, y=y,
              half=F(0.5), quarter=F(0.25))


def softmax(x):
    return _softmax_rows(x)


def add(x, y):
    return ev("x + y", x=x, y=y)
