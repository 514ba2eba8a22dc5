"""The operations of the IR and, for each, its meaning in NumPy.

One table holds what every op means: its arity and the NumPy function that
defines its dtype rule and serves as the reference in tests. Shape rules live
with the builders in ``cuvil_aot.compiler.frontend.builder`` (casts, reshapes and
permutations in ``cuvil_aot.compiler.ir.construct``); C lowerings are keyed by
``Op`` in ``cuvil_aot.compiler.codegen.ops_c`` (C) and ``ops_cuda`` (CUDA).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any

import numpy as np


class Op(enum.Enum):
    PARAM = enum.auto()
    CONST = enum.auto()
    # elementwise, unary
    NEG = enum.auto()
    ABS = enum.auto()
    SIGN = enum.auto()
    EXP = enum.auto()
    EXPM1 = enum.auto()
    LOG = enum.auto()
    LOG1P = enum.auto()
    SQRT = enum.auto()
    SQUARE = enum.auto()
    TANH = enum.auto()
    ERF = enum.auto()  # scipy.special.erf and math.erf (BERT's exact GELU)
    SIN = enum.auto()
    COS = enum.auto()
    # the C library's (libm / CUDA's) functions of NumPy's float ufuncs of the same names
    TAN = enum.auto()
    ARCSIN = enum.auto()
    ARCCOS = enum.auto()
    ARCTAN = enum.auto()
    SINH = enum.auto()
    COSH = enum.auto()
    ARCSINH = enum.auto()
    ARCCOSH = enum.auto()
    ARCTANH = enum.auto()
    EXP2 = enum.auto()
    LOG2 = enum.auto()
    LOG10 = enum.auto()
    CBRT = enum.auto()
    FLOOR = enum.auto()
    CEIL = enum.auto()
    RINT = enum.auto()  # to the nearest integer, ties to even (np.rint)
    INVERT = enum.auto()
    CAST = enum.auto()
    # float32 rounded to TF32 (10 mantissa bits, to nearest, ties away from zero: the GPU's
    # cvt.rna.tf32.f32); made only by passes/precision.py, for matmul operands
    TF32 = enum.auto()
    # elementwise, binary
    ADD = enum.auto()
    SUB = enum.auto()
    MUL = enum.auto()
    DIV = enum.auto()
    FLOORDIV = enum.auto()
    MOD = enum.auto()
    POW = enum.auto()
    ARCTAN2 = enum.auto()
    HYPOT = enum.auto()
    COPYSIGN = enum.auto()
    MAXIMUM = enum.auto()
    MINIMUM = enum.auto()
    LT = enum.auto()
    LE = enum.auto()
    GT = enum.auto()
    GE = enum.auto()
    EQ = enum.auto()
    NE = enum.auto()
    LSHIFT = enum.auto()
    RSHIFT = enum.auto()
    AND = enum.auto()
    OR = enum.auto()
    XOR = enum.auto()
    # elementwise, ternary
    WHERE = enum.auto()
    # reductions over attrs[0] (a sorted tuple of axes); the axes are dropped
    SUM = enum.auto()
    PROD = enum.auto()
    MAX = enum.auto()
    MIN = enum.auto()
    ARGMAX = enum.auto()
    ARGMIN = enum.auto()
    # (batch?, m, k) @ (batch?, k, n)
    MATMUL = enum.auto()
    # movement: free views of their source
    PERMUTE = enum.auto()  # attrs: (perm,)
    SLICE = enum.auto()  # attrs: (starts, steps) per axis, Dims
    BROADCAST = enum.auto()  # to self.type.shape, source rank <= result rank
    RESHAPE = enum.auto()  # to self.type.shape
    # attrs: (axis,): the source's axis `axis` (length n) read in windows of the result's
    # last axis' length w: the source's shape with that axis n - w + 1, then w; element
    # [..., i, ..., j] is source[..., i + j, ...] (np.lib.stride_tricks.sliding_window_view)
    WINDOW = enum.auto()
    CONCAT = enum.auto()  # attrs: (axis,)
    # creation: int64 0, 1, ..., n - 1 for self.type.shape == (n,) (np.arange)
    IOTA = enum.auto()
    # gather: srcs (table, index arrays of one shape S), attrs (axis, user_axes, take); the
    # result table.shape[:axis] + S + table.shape[axis + len(index arrays):] holds at
    # (p, s, q) table[p, wrap(idx_0[s]), ..., q]: each index wrapped once when negative,
    # out of range raising IndexError at the call (NumPy's message names user_axes[k];
    # take: np.take's, which has its own for an empty axis)
    GATHER = enum.auto()
    # assignment into a region (x[idx] = v, NumPy's __setitem__): srcs (old, value), attrs
    # (starts, steps) per axis, Dims; the result is old with old[starts[a] + k * steps[a]
    # for k < value.shape[a], per axis a] replaced by value (of old's dtype and rank: an int
    # index is an axis of size 1). Fusion writes it in place (passes/inplace.py)
    SETITEM = enum.auto()
    # assignment through integer arrays (x[:, ids] = v, frontend/scatter.py): srcs (old,
    # value, index arrays of one shape S), attrs (axes, at, starts, steps): the index arrays
    # name positions along old's axes `axes`; value has old's dtype and the shape of the
    # other axes' slices (starts[a] + k * steps[a]) with S at position `at`. The result is
    # old with old[.., wrap(idx_k[s]) on axes[k], ..] = value[.., s, ..] in C order of
    # value (the last write of a duplicate index wins; on the GPU any one); an index out of
    # range raises IndexError at the call. Written in place like SETITEM (passes/inplace.py)
    SCATTER = enum.auto()
    # along axis attrs[0], one sequential pass per row (frontend/scans.py): running sum,
    # product (in the result dtype; the source is cast to it), maximum or minimum (NumPy's
    # np.maximum / np.minimum: a NaN stays once seen), a stable sort with NaNs last, or its
    # permutation (int64); the result has the source's shape
    CUMSUM = enum.auto()
    CUMPROD = enum.auto()
    CUMMAX = enum.auto()
    CUMMIN = enum.auto()
    SORT = enum.auto()
    ARGSORT = enum.auto()
    # a carried value after a run-time loop (ir/loop.py): srcs (initial values..., captured
    # values...), attrs (LoopBody, j): the j-th carried value once the body has run
    LOOP_OUT = enum.auto()


UNARY = frozenset({Op.NEG, Op.ABS, Op.SIGN, Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.SQRT,
                   Op.SQUARE, Op.TANH, Op.ERF, Op.SIN, Op.COS, Op.TAN, Op.ARCSIN, Op.ARCCOS,
                   Op.ARCTAN, Op.SINH, Op.COSH, Op.ARCSINH, Op.ARCCOSH, Op.ARCTANH, Op.EXP2,
                   Op.LOG2, Op.LOG10, Op.CBRT, Op.FLOOR, Op.CEIL, Op.RINT, Op.INVERT, Op.CAST,
                   Op.TF32})
BINARY = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.MOD, Op.POW, Op.ARCTAN2,
                    Op.HYPOT, Op.COPYSIGN, Op.MAXIMUM,
                    Op.MINIMUM, Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE, Op.AND, Op.OR, Op.XOR,
                    Op.LSHIFT, Op.RSHIFT})
COMPARE = frozenset({Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE})
ELEMENTWISE = UNARY | BINARY | {Op.WHERE}
REDUCE = frozenset({Op.SUM, Op.PROD, Op.MAX, Op.MIN, Op.ARGMAX, Op.ARGMIN})
MOVEMENT = frozenset({Op.PERMUTE, Op.SLICE, Op.BROADCAST, Op.RESHAPE, Op.WINDOW})
SCANS = frozenset({Op.CUMSUM, Op.CUMPROD, Op.CUMMAX, Op.CUMMIN, Op.SORT,
                   Op.ARGSORT})  # a kernel of whole rows
WRITES = frozenset({Op.SETITEM, Op.SCATTER})  # assignments, written in place

def erf(x: Any) -> Any:
    """What Op.ERF means: scipy.special.erf's dtypes (float32 stays, the rest float64; the
    builder reads them here) with libm's values, as math.erf's. SciPy is not needed."""
    x = np.asarray(x)
    out = np.vectorize(math.erf, otypes=[np.float64])(x)
    return out.astype(np.float32) if x.dtype == np.float32 else out


def round_tf32(x: Any) -> Any:
    """Float32 values rounded to TF32 as Op.TF32 does; inf and NaN as they are."""
    x = np.asarray(x, np.float32)
    bits = (x.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    return np.where(np.isfinite(x), bits.view(np.float32), x)


# The NumPy meaning of each computing op: it fixes the result dtype (through
# NumPy's own type resolution, see frontend.builder) and is the test reference.
NUMPY: dict[Op, Callable[..., Any]] = {
    Op.NEG: np.negative, Op.ABS: np.absolute, Op.SIGN: np.sign, Op.EXP: np.exp,
    Op.EXPM1: np.expm1, Op.LOG: np.log, Op.LOG1P: np.log1p, Op.SQRT: np.sqrt,
    Op.SQUARE: np.square, Op.TANH: np.tanh, Op.ERF: erf, Op.SIN: np.sin,
    Op.COS: np.cos,
    Op.TAN: np.tan, Op.ARCSIN: np.arcsin, Op.ARCCOS: np.arccos, Op.ARCTAN: np.arctan,
    Op.SINH: np.sinh, Op.COSH: np.cosh, Op.ARCSINH: np.arcsinh, Op.ARCCOSH: np.arccosh,
    Op.ARCTANH: np.arctanh, Op.EXP2: np.exp2, Op.LOG2: np.log2, Op.LOG10: np.log10,
    Op.CBRT: np.cbrt, Op.ARCTAN2: np.arctan2, Op.HYPOT: np.hypot, Op.COPYSIGN: np.copysign,
    Op.FLOOR: np.floor, Op.CEIL: np.ceil, Op.RINT: np.rint, Op.INVERT: np.invert,
    Op.TF32: round_tf32,
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.true_divide,
    Op.FLOORDIV: np.floor_divide, Op.MOD: np.remainder, Op.POW: np.power,
    Op.MAXIMUM: np.maximum, Op.MINIMUM: np.minimum, Op.LT: np.less, Op.LE: np.less_equal,
    Op.GT: np.greater, Op.GE: np.greater_equal, Op.EQ: np.equal, Op.NE: np.not_equal,
    Op.AND: np.bitwise_and, Op.OR: np.bitwise_or, Op.XOR: np.bitwise_xor, Op.WHERE: np.where,
    Op.LSHIFT: np.left_shift, Op.RSHIFT: np.right_shift,
    Op.SUM: np.sum, Op.PROD: np.prod, Op.MAX: np.max, Op.MIN: np.min,
    Op.ARGMAX: np.argmax, Op.ARGMIN: np.argmin, Op.MATMUL: np.matmul,
    Op.CUMSUM: np.cumsum, Op.CUMPROD: np.cumprod, Op.CUMMAX: np.maximum.accumulate,
    Op.CUMMIN: np.minimum.accumulate, Op.SORT: np.sort, Op.ARGSORT: np.argsort,
}
