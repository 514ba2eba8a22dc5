"""The models as ONNX graphs built with ``onnx.helper`` (opset 17), run by ONNX Runtime.

Weights are graph inputs, not initializers: every competitor gets the same arguments.
"""

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

OPSET = 17


class Graph:
    """A small builder: ``g.op("Add", a, b)`` appends a node and returns its output name."""

    def __init__(self, names: list[str], arrays: tuple[np.ndarray, ...]):
        self.inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
                       for n, a in zip(names, arrays)]
        self.nodes: list[onnx.NodeProto] = []
        self.consts: list[onnx.TensorProto] = []

    def op(self, kind: str, *args: str, n_out: int = 1, **attrs):
        outs = [f"t{len(self.nodes)}_{k}" for k in range(n_out)]
        self.nodes.append(helper.make_node(kind, list(args), outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value: float) -> str:
        name = f"c{len(self.consts)}"
        self.consts.append(helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
        return name

    def model(self, outputs: list[str], shapes) -> onnx.ModelProto:
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, s)
                for o, s in zip(outputs, shapes)]
        graph = helper.make_graph(self.nodes, "bench", self.inputs, outs, self.consts)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def matmul_relu(g: Graph):
    return [g.op("Relu", g.op("Add", g.op("MatMul", "x", "w"), "b"))]


def lstm_step(g: Graph):
    gates = g.op("Add", g.op("Add", g.op("MatMul", "x", "wx"), g.op("MatMul", "h", "wh")), "b")
    gi, gf, gg, go = g.op("Split", gates, n_out=4, axis=1)
    c2 = g.op("Add", g.op("Mul", g.op("Sigmoid", gf), "c"),
              g.op("Mul", g.op("Sigmoid", gi), g.op("Tanh", gg)))
    return [g.op("Mul", g.op("Sigmoid", go), g.op("Tanh", c2)), c2]


def resnet_head(g: Graph):
    pooled = g.op("ReduceMean", "fmap", axes=[2, 3], keepdims=0)
    return [g.op("Softmax", g.op("Add", g.op("MatMul", pooled, "w"), "b"), axis=1)]


def _gelu(g: Graph, v: str) -> str:
    cube = g.op("Mul", g.op("Mul", v, v), v)
    inner = g.op("Mul", g.const(0.7978845608028654),
                 g.op("Add", v, g.op("Mul", g.const(0.044715), cube)))
    return g.op("Mul", g.op("Mul", g.const(0.5), v),
                g.op("Add", g.const(1.0), g.op("Tanh", inner)))


def ffn_block(g: Graph):
    h = g.op("LayerNormalization", "x", "g", "beta", axis=-1, epsilon=1e-5)
    a = _gelu(g, g.op("Add", g.op("MatMul", h, "w1"), "b1"))
    return [g.op("Add", g.op("Add", "x", g.op("MatMul", a, "w2")), "b2")]


def elementwise_chain(g: Graph):
    t = g.op("Tanh", g.op("Add", g.op("Mul", "x", g.const(0.5)), "y"))
    return [g.op("Sub", g.op("Mul", t, g.op("Sigmoid", "y")),
                 g.op("Mul", g.op("Abs", "x"), g.const(0.25)))]


def softmax(g: Graph):
    return [g.op("Softmax", "x", axis=-1)]


def add(g: Graph):
    return [g.op("Add", "x", "y")]


def build(model: str, names: list[str], arrays: tuple[np.ndarray, ...], out_shapes):
    """A function of the arrays running the model's graph in an ONNX Runtime session."""
    g = Graph(names, arrays)
    proto = g.model(globals()[model](g), out_shapes)
    onnx.checker.check_model(proto)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])

    def run(*args: np.ndarray):
        return sess.run(None, dict(zip(names, args)))

    return run
