"""C lowering of each computing op: a table keyed by Op, per dtype family.

Values of float16 are computed in float (NumPy rounds after every op; we
round once at the store), so the families are: f (float), d (double),
i32, i64 and b (bool, stored as one byte).
"""

from __future__ import annotations

from cuvil_aot.ir.ops import Op

CTYPE = {"bool": "cv_bool", "int32": "int32_t", "int64": "int64_t", "float16": "float",
         "float32": "float", "float64": "double"}
STORAGE = {**CTYPE, "float16": "cv_f16"}
ITEMSIZE = {"bool": 1, "int32": 4, "int64": 8, "float16": 2, "float32": 4, "float64": 8}
FAMILY = {"bool": "b", "int32": "i32", "int64": "i64", "float16": "f", "float32": "f",
          "float64": "d"}

_FLOAT_MATH = {Op.EXP: "exp", Op.EXPM1: "expm1", Op.LOG: "log", Op.LOG1P: "log1p",
               Op.TANH: "tanh", Op.SIN: "sin", Op.COS: "cos"}
_LIBM = {Op.SQRT: "sqrt", Op.FLOOR: "floor", Op.CEIL: "ceil", Op.ABS: "fabs", Op.POW: "pow"}
_INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.LT: "<", Op.LE: "<=", Op.GT: ">",
          Op.GE: ">=", Op.EQ: "==", Op.NE: "!=", Op.AND: "&", Op.OR: "|", Op.XOR: "^"}


class Unsupported(Exception):
    """An op/dtype pair with no C lowering; ``span`` points at the user's code."""

    def __init__(self, message: str, span: object = None):
        super().__init__(message)
        self.span = span


def render(op: Op, dtype: str, args: list[str]) -> str:
    """C expression for ``op`` computing in ``dtype`` on operand expressions ``args``."""
    fam = FAMILY[dtype]
    is_float = fam in ("f", "d")
    if op in _INFIX:
        return f"({args[0]} {_INFIX[op]} {args[1]})"
    if op is Op.DIV:
        return f"({args[0]} / {args[1]})"
    if op is Op.NEG:
        return f"(-{args[0]})" if fam != "b" else args[0]
    if op is Op.SQUARE:
        return f"({args[0]} * {args[0]})"
    if op is Op.WHERE:
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if op is Op.INVERT:
        return f"(!{args[0]})" if fam == "b" else f"(~{args[0]})"
    if op in (Op.MAXIMUM, Op.MINIMUM):
        if is_float:  # vmath.h: a NaN in either operand is the result
            name = "fmax" if op is Op.MAXIMUM else "fmin"
            return f"cv_{name}{'f' if fam == 'f' else ''}_np({args[0]}, {args[1]})"
        cmp = ">" if op is Op.MAXIMUM else "<"
        return f"({args[0]} {cmp} {args[1]} ? {args[0]} : {args[1]})"
    if op in (Op.FLOORDIV, Op.MOD, Op.POW) and fam == "b":
        raise Unsupported(f"{op.name.lower()} of booleans")
    if op is Op.POW and not is_float:
        return f"cv_power_{fam}({args[0]}, {args[1]})"
    if op in (Op.FLOORDIV, Op.MOD):  # Python's sign rules, as NumPy computes them
        name = "floor_divide" if op is Op.FLOORDIV else "remainder"
        suffix = {"f": "f", "d": "", "i32": "_i32", "i64": "_i64"}[fam]
        return f"cv_{name}{suffix}({args[0]}, {args[1]})"
    if op is Op.SIGN:
        if is_float:
            return f"cv_sign{'f' if fam == 'f' else ''}({args[0]})"
        return f"(({args[0]} > 0) - ({args[0]} < 0))"
    if op is Op.ABS and not is_float:
        return f"({args[0]} < 0 ? -{args[0]} : {args[0]})"
    if op in (Op.FLOOR, Op.CEIL) and not is_float:
        return args[0]
    if op in (Op.SIN, Op.COS) and fam == "d":  # vmath's float64 sin/cos stop at 2^32: libm
        return f"{_FLOAT_MATH[op]}({args[0]})"
    if op in _FLOAT_MATH and is_float:  # vmath.h: vectorizable range-reduced polynomials
        return f"cv_{_FLOAT_MATH[op]}{'f' if fam == 'f' else ''}({', '.join(args)})"
    if op in _LIBM and is_float:
        return f"{_LIBM[op]}{'f' if fam == 'f' else ''}({', '.join(args)})"
    raise Unsupported(f"{op.name.lower()} on {dtype}")


def cast(value: str, src: str, dst: str) -> str:
    if src == dst:
        return value
    if dst == "float16":  # computed in float, but the value must be rounded to half
        return f"((float)(cv_f16)({value}))"
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
    if fam in ("i32", "i64"):
        return f"((int64_t){int(value)}LL)" if fam == "i64" else f"((int32_t){int(value)})"
    v = float(value)
    if v != v:
        return f"(({CTYPE[dtype]})NAN)"
    if v in (float("inf"), float("-inf")):
        return f"(({CTYPE[dtype]}){'-' if v < 0 else ''}INFINITY)"
    return f"(({CTYPE[dtype]}){v!r})"
