"""C lowering of each computing op: a table keyed by Op, per dtype family.

Values of float16 and bfloat16 are computed in float (NumPy rounds after every op; we
round once at the store and at each cast), so the families are: f (float), d (double),
i8, i16, i32, i64, u8, u64 and b (bool, stored as one byte).

NumPy's integers wrap after every op. C computes the small ones (i8, i16, u8) in
int, exactly, and each op's result is stored in a local of its own C type
(``const int8_t v3 = ...``, kernel_emitter.Body.local), which wraps it: so they
share the int32 helpers (floor division, remainder, power), exact before that wrap.

``CLanguage.lowerings`` maps every elementwise op to its lowering, a format of the
operand expressions or a small method where the family matters; CAST is the one
exception, a conversion between two dtypes (``cast``). The CUDA table (ops_cuda.py)
extends this one and overrides what differs.
"""

from __future__ import annotations

from collections.abc import Callable

from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import Op

CTYPE = {"bool": "cv_bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
         "int64": "int64_t", "uint8": "uint8_t", "uint64": "uint64_t", "float16": "float",
         "bfloat16": "float", "float32": "float", "float64": "double"}
STORAGE = {**CTYPE, "float16": "cv_f16", "bfloat16": "cv_bf16"}
ITEMSIZE = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint64": 8,
            "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
FAMILY = {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint64": "u64", "float16": "f", "bfloat16": "f", "float32": "f",
          "float64": "d"}
# Stored in a type C does not convert implicitly (kernel.h's cv_bf16): read and written
# through load() and store(); every other storage type converts as C assigns.
CONVERTED = {"bfloat16": ("cv_bf16_load", "cv_bf16_store")}
# NumPy's type number of each dtype, a C expression for the wrappers: bfloat16 is
# ml_dtypes', registered at run time (pywrap.h's cv_bf16_typenum; with 0 it imports nothing
# and matches no array while ml_dtypes is not imported)
TYPENUM = {dtype: f"NPY_{dtype.upper()}" for dtype in CTYPE} | {"bfloat16": "cv_bf16_typenum(0)"}
# Computed in float, rounded to their own type where a value of it is made (cast)
ROUNDED = {"float16": "(float)(cv_f16)", "bfloat16": "cv_bf16_round"}
FLOATS = ("f", "d")
UNSIGNED = ("u8", "u64")
INTEGERS = ("i8", "i16", "i32", "i64", *UNSIGNED)
# The helper of each integer family (see the module docstring for the small ones)
INT_HELPER = {"i8": "i32", "i16": "i32", "u8": "i32", "i32": "i32", "i64": "i64", "u64": "u64"}

# An op's expression from the family it computes in and its operand expressions; None
# where that family has no lowering.
Lowering = Callable[[str, list[str]], str | None]

_INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.LT: "<", Op.LE: "<=",
          Op.GT: ">", Op.GE: ">=", Op.EQ: "==", Op.NE: "!=", Op.AND: "&", Op.OR: "|",
          Op.XOR: "^"}
_VMATH = {Op.EXP: "exp", Op.EXPM1: "expm1", Op.LOG: "log", Op.LOG1P: "log1p", Op.TANH: "tanh",
          Op.ERF: "erf"}
# Float ufuncs whose NumPy loops are the C library's (float64; float32 within a few ulp):
# libm's functions here, CUDA's of the same names on the device
LIBM = {Op.TAN: "tan", Op.ARCSIN: "asin", Op.ARCCOS: "acos", Op.ARCTAN: "atan", Op.SINH: "sinh",
        Op.COSH: "cosh", Op.ARCSINH: "asinh", Op.ARCCOSH: "acosh", Op.ARCTANH: "atanh",
        Op.EXP2: "exp2", Op.LOG2: "log2", Op.LOG10: "log10", Op.CBRT: "cbrt",
        Op.ARCTAN2: "atan2", Op.HYPOT: "hypot", Op.COPYSIGN: "copysign"}
_NOT_ON_BOOLEANS = (Op.FLOORDIV, Op.MOD, Op.POW)


class Unsupported(Exception):
    """An op/dtype pair with no C lowering; ``span`` points at the user's code."""

    def __init__(self, message: str, span: object = None):
        super().__init__(message)
        self.span = span


def formatted(template: str) -> Lowering:
    """The same lowering for every family: ``template`` of the operands {0}, {1}, {2}."""
    return lambda fam, args: template.format(*args)


def call(function: str, args: list[str]) -> str:
    return f"{function}({', '.join(args)})"


def float_suffix(fam: str) -> str:
    """The suffix of a C math function's float version (``expf``); double has none."""
    return "f" if fam == "f" else ""


class CLanguage:
    """Op -> its C lowering (``code_for_op``), and ``render`` to apply it."""

    def __init__(self) -> None:
        self.code_for_op: dict[Op, Lowering] = self.lowerings()

    def lowerings(self) -> dict[Op, Lowering]:
        table = {op: formatted(f"({{0}} {symbol} {{1}})") for op, symbol in _INFIX.items()}
        return table | {
            Op.SQUARE: formatted("({0} * {0})"),
            Op.LSHIFT: self.shift("<<"),
            Op.RSHIFT: self.shift(">>"),
            Op.WHERE: formatted("({0} ? {1} : {2})"),
            Op.NEG: self.negative,
            Op.INVERT: self.invert,
            Op.MAXIMUM: self.extremum("fmax", ">"),
            Op.MINIMUM: self.extremum("fmin", "<"),
            Op.FLOORDIV: self.floor_division("floor_divide"),
            Op.MOD: self.floor_division("remainder"),
            Op.POW: self.power,
            Op.SIGN: self.sign,
            Op.ABS: self.absolute,
            Op.FLOOR: self.rounding("floor"),
            Op.CEIL: self.rounding("ceil"),
            Op.RINT: self.rounding("rint"),  # ties to even in the default rounding mode
            Op.SQRT: self.libm("sqrt"),
            Op.TF32: lambda fam, args: call("cv_tf32_round", args) if fam == "f" else None,
            Op.SIN: self.trigonometric("sin"),
            Op.COS: self.trigonometric("cos"),
            **{op: self.vmath(name) for op, name in _VMATH.items()},
            **{op: self.libm(name) for op, name in LIBM.items()},
        }

    def render(self, op: Op, dtype: str, args: list[str]) -> str:
        """The expression for ``op`` computing in ``dtype`` on operand expressions ``args``."""
        fam = FAMILY[dtype]
        if fam == "b" and op in _NOT_ON_BOOLEANS:
            raise Unsupported(f"{op.name.lower()} of booleans")
        lowering = self.code_for_op.get(op)
        code = lowering(fam, args) if lowering is not None else None
        if code is None:
            raise Unsupported(f"{op.name.lower()} on {dtype}")
        return code

    # The lowerings where the family matters --------------------------------------------
    @staticmethod
    def negative(fam: str, args: list[str]) -> str:
        return args[0] if fam == "b" else f"(-{args[0]})"

    @staticmethod
    def invert(fam: str, args: list[str]) -> str:
        return f"(!{args[0]})" if fam == "b" else f"(~{args[0]})"

    @staticmethod
    def extremum(name: str, cmp: str) -> Lowering:
        """maximum / minimum: for floats vmath.h's, where a NaN in either operand wins."""
        def lowering(fam: str, args: list[str]) -> str:
            if fam in FLOATS:
                return call(f"cv_{name}{float_suffix(fam)}_np", args)
            return f"({args[0]} {cmp} {args[1]} ? {args[0]} : {args[1]})"
        return lowering

    @staticmethod
    def floor_division(name: str) -> Lowering:
        """floor_divide / remainder: Python's sign rules, as NumPy computes them."""
        def lowering(fam: str, args: list[str]) -> str:
            suffix = float_suffix(fam) if fam in FLOATS else f"_{INT_HELPER[fam]}"
            return call(f"cv_{name}{suffix}", args)
        return lowering

    @staticmethod
    def shift(symbol: str) -> Lowering:
        """NumPy's left_shift / right_shift (npy_lshift, npy_rshift): a shift by the width
        or more, or by a negative amount (compared unsigned), gives 0, or -1 for a right
        shift of a negative value; else C's shift, a left one on the unsigned bits. In the
        helper type: a small type's result wraps at its store, as NumPy's does (its own
        width's threshold gives the same)."""
        def lowering(fam: str, args: list[str]) -> str | None:
            if fam not in INTEGERS:
                return None
            helper = INT_HELPER[fam]
            ctype, bits, width = {"i32": ("int32_t", "uint32_t", 32),
                                  "i64": ("int64_t", "uint64_t", 64),
                                  "u64": ("uint64_t", "uint64_t", 64)}[helper]
            a, b = args
            if symbol == "<<":
                shifted = f"({ctype})(({bits})({a}) << ({b}))"
                beyond = f"({ctype})0"
            else:
                shifted = f"({ctype})(({ctype})({a}) >> ({b}))"
                beyond = f"({ctype})0" if helper == "u64" else f"({ctype})(({a}) < 0 ? -1 : 0)"
            return f"((uint64_t)({b}) < {width} ? {shifted} : {beyond})"
        return lowering

    @staticmethod
    def power(fam: str, args: list[str]) -> str:
        if fam in FLOATS:
            return call(f"pow{float_suffix(fam)}", args)
        return call(f"cv_power_{INT_HELPER[fam]}", args)

    @staticmethod
    def sign(fam: str, args: list[str]) -> str:
        if fam in FLOATS:
            return call(f"cv_sign{float_suffix(fam)}", args)
        if fam in UNSIGNED:
            return f"({args[0]} > 0)"
        return f"(({args[0]} > 0) - ({args[0]} < 0))"

    @staticmethod
    def absolute(fam: str, args: list[str]) -> str:
        if fam in FLOATS:
            return call(f"fabs{float_suffix(fam)}", args)
        if fam in UNSIGNED:
            return args[0]
        return f"({args[0]} < 0 ? -{args[0]} : {args[0]})"  # |INT8_MIN| wraps to itself

    @staticmethod
    def rounding(name: str) -> Lowering:
        """floor / ceil / rint: libm on floats, nothing to do on integers."""
        return lambda fam, args: call(f"{name}{float_suffix(fam)}", args) if fam in FLOATS \
            else args[0]

    @staticmethod
    def libm(name: str) -> Lowering:
        """A float-only function of the C library."""
        return lambda fam, args: call(f"{name}{float_suffix(fam)}", args) if fam in FLOATS \
            else None

    @staticmethod
    def vmath(name: str) -> Lowering:
        """A float-only function of vmath.h: vectorizable range-reduced polynomials."""
        return lambda fam, args: call(f"cv_{name}{float_suffix(fam)}", args) if fam in FLOATS \
            else None

    @classmethod
    def trigonometric(cls, name: str) -> Lowering:
        """sin / cos: vmath.h's in float; its float64 versions stop at 2^32, so libm's."""
        vmath = cls.vmath(name)
        return lambda fam, args: call(name, args) if fam == "d" else vmath(fam, args)


C = CLanguage()


class HostLanguage(CLanguage):
    """The C table for the numbers the wrapper computes once per call (host_scalars.py):
    libm's math, as Python's math module and NumPy's float64 scalars compute it."""

    def lowerings(self) -> dict[Op, Lowering]:
        table = super().lowerings()
        for op, name in {**_VMATH, Op.SIN: "sin", Op.COS: "cos"}.items():
            table[op] = self.libm(name)
        return table


HOST = HostLanguage()


def render(op: Op, dtype: str, args: list[str]) -> str:
    """C expression for ``op`` computing in ``dtype`` on operand expressions ``args``."""
    return C.render(op, dtype, args)


def load(dtype: str, element: str) -> str:
    """The computing value of a stored ``element`` of ``dtype``."""
    return f"{CONVERTED[dtype][0]}({element})" if dtype in CONVERTED else element


def store(dtype: str, value: str, rounded: bool = False) -> str:
    """What assigning the computed ``value`` to an element of ``dtype`` stores; ``rounded``:
    the value is already of that type (a cast to it), so a bfloat16 keeps its bits."""
    if dtype == "bfloat16" and rounded:
        return f"cv_bf16_exact({value})"
    if dtype in CONVERTED:
        return f"{CONVERTED[dtype][1]}({value})"
    return f"({STORAGE[dtype]})({value})"


def rounded_to(node: Node) -> bool:
    """Whether ``node``'s computed value is already rounded to its own dtype: a cast from
    another type into one that ROUNDED rounds (cast() above)."""
    return node.op is Op.CAST and node.dtype in ROUNDED and node.srcs[0].dtype != node.dtype


def cast(value: str, src: str, dst: str) -> str:
    if src == dst:
        return value
    if dst in ROUNDED:  # computed in float, but the value must be rounded to its type
        return f"({ROUNDED[dst]}({value}))"
    if CTYPE[src] == CTYPE[dst]:
        return value
    if dst == "bool":
        return f"(cv_bool)({value} != 0)"
    return f"({CTYPE[dst]})({value})"


def literal(value: bool | int | float, dtype: str) -> str:
    """A C literal of ``dtype``; value is a Python number (NaN and infinities included)."""
    fam = FAMILY[dtype]
    if fam == "b":
        return "1" if value else "0"
    if fam == "i64":  # -2^63 has no literal: 2^63 does not fit in long long
        return "INT64_MIN" if int(value) == -2**63 else f"((int64_t){int(value)}LL)"
    if fam == "u64":
        return f"((uint64_t){int(value)}ULL)"
    if fam in INTEGERS:
        return f"(({CTYPE[dtype]}){int(value)})"
    v = float(value)
    if v != v:
        return f"(({CTYPE[dtype]})NAN)"
    if v in (float("inf"), float("-inf")):
        return f"(({CTYPE[dtype]}){'-' if v < 0 else ''}INFINITY)"
    return f"(({CTYPE[dtype]}){v!r})"


# Reductions: the value each starts from -------------------------------------------------

REDUCE_INIT = {Op.SUM: "0", Op.PROD: "1"}


def extreme(dtype: str, high: bool) -> str:
    """The highest (``high``) or lowest value of ``dtype``: where a MIN (MAX) starts."""
    fam = FAMILY[dtype]
    if fam in FLOATS:
        return "INFINITY" if high else "-INFINITY"
    if fam == "b":
        return "1" if high else "0"
    if fam in UNSIGNED:
        return f"{dtype.upper()}_MAX" if high else "0"
    return f"{dtype.upper()}_{'MAX' if high else 'MIN'}"
