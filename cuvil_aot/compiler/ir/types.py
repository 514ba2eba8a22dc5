"""Types of the IR: dtypes, symbolic dimensions and tensor types.

A dimension is a polynomial with integer coefficients over named symbols
(``B``, ``4*H``, ``B*H + 1``), kept in a canonical form so that structural
equality is mathematical equality. Static dimensions are constant polynomials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Monomial: sorted tuple of symbol names (with repetition for powers); () is 1.
Monomial = tuple[str, ...]

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint64", "float16", "bfloat16",
          "float32", "float64")


def np_dtype(dtype: str) -> np.dtype[Any]:
    """The NumPy dtype of an IR dtype name. bfloat16 is ml_dtypes' (imported here, on first
    need only: NumPy knows the name "bfloat16" once ml_dtypes has registered it)."""
    if dtype == "bfloat16":
        try:
            import ml_dtypes  # the optional extra "bf16"
        except ImportError:
            raise ValueError("bfloat16 arrays are ml_dtypes.bfloat16: install ml_dtypes "
                             "(pip install 'cuvil-aot[bf16]')") from None
        bfloat16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return bfloat16
    return np.dtype(dtype)


def dtype_of(np_dtype_like: object) -> str:
    """The IR dtype name of a NumPy dtype, or ValueError for unsupported ones."""
    if isinstance(np_dtype_like, str) and np_dtype_like == "bfloat16":
        return dtype_of(np_dtype("bfloat16"))
    name = str(np.dtype(np_dtype_like).name)  # type: ignore[call-overload]
    if name not in DTYPES:
        raise ValueError(f"dtype {name} is not supported (supported: {', '.join(DTYPES)})")
    return name


def is_float(dtype: str) -> bool:
    return dtype.startswith("float") or dtype == "bfloat16"


def is_int(dtype: str) -> bool:
    """Signed or unsigned integers (not bool)."""
    return dtype.startswith(("int", "uint"))


@dataclass(frozen=True, slots=True)
class Dim:
    """A dimension: sum of coefficient * monomial, canonical (sorted, no zero terms)."""

    terms: tuple[tuple[Monomial, int], ...] = ()

    @staticmethod
    def of(value: int | str | Dim) -> Dim:
        if isinstance(value, Dim):
            return value
        if isinstance(value, str):
            return Dim((((value,), 1),))
        return Dim((((), int(value)),) if int(value) else ())

    @staticmethod
    def _canon(items: dict[Monomial, int]) -> Dim:
        return Dim(tuple(sorted((m, c) for m, c in items.items() if c)))

    def _items(self) -> dict[Monomial, int]:
        return dict(self.terms)

    # Arithmetic ----------------------------------------------------------
    def __add__(self, other: int | Dim) -> Dim:
        items = self._items()
        for m, c in Dim.of(other).terms:
            items[m] = items.get(m, 0) + c
        return Dim._canon(items)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return Dim(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: int | Dim) -> Dim:
        return self + (-Dim.of(other))

    def __rsub__(self, other: int | Dim) -> Dim:
        return Dim.of(other) - self

    def __mul__(self, other: int | Dim) -> Dim:
        items: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in Dim.of(other).terms:
                m = tuple(sorted(m1 + m2))
                items[m] = items.get(m, 0) + c1 * c2
        return Dim._canon(items)

    __rmul__ = __mul__

    def exact_div(self, other: int | Dim) -> Dim | None:
        """self / other when it divides exactly as polynomials, else None."""
        o = Dim.of(other)
        if o.is_static:
            d = o.value
            if d == 0 or any(c % d for _, c in self.terms):
                return None
            return Dim(tuple((m, c // d) for m, c in self.terms))
        if len(o.terms) != 1:
            return None
        (om, oc), = o.terms
        items: dict[Monomial, int] = {}
        for m, c in self.terms:
            rest = list(m)
            for s in om:
                if s not in rest:
                    return None
                rest.remove(s)
            if c % oc:
                return None
            items[tuple(rest)] = c // oc
        return Dim._canon(items)

    # Queries -------------------------------------------------------------
    @property
    def is_static(self) -> bool:
        return all(m == () for m, _ in self.terms)

    @property
    def value(self) -> int:
        if not self.is_static:
            raise ValueError(f"dimension {self} is symbolic")
        return self.terms[0][1] if self.terms else 0

    @property
    def symbols(self) -> frozenset[str]:
        return frozenset(s for m, _ in self.terms for s in m)

    def known_nonnegative(self) -> bool:
        """True when every coefficient is >= 0 (symbols are sizes, so >= 0)."""
        return all(c >= 0 for _, c in self.terms)

    def known_positive(self) -> bool:
        """True when the value is > 0 for every size of the symbols: no negative
        coefficient and a positive constant term (``N + 1``, ``2*N*M + 3``)."""
        return self.known_nonnegative() and dict(self.terms).get((), 0) > 0

    def linear_in(self, symbol: str) -> tuple[int, Dim] | None:
        """(c, rest) with self == c*symbol + rest and symbol absent from rest."""
        coeff, rest = 0, {}
        for m, c in self.terms:
            if m == (symbol,):
                coeff = c
            elif symbol in m:
                return None
            else:
                rest[m] = c
        return (coeff, Dim._canon(rest)) if coeff else None

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in self.terms:
            body = "*".join(m)
            if not body:
                parts.append(str(c))
            elif c == 1:
                parts.append(body)
            elif c == -1:
                parts.append("-" + body)
            else:
                parts.append(f"{c}{body}" if len(m) == 1 else f"{c}*{body}")
        return " + ".join(parts).replace("+ -", "- ")

    def c_expr(self, symbol_var: str = "{}") -> str:
        """A C int64 expression; symbols render through ``symbol_var``."""
        if not self.terms:
            return "0"
        parts = []
        for m, c in self.terms:
            factors = [f"(int64_t){c}"] if c != 1 or not m else []
            factors += [symbol_var.format(s) for s in m]
            parts.append("*".join(factors))
        return "(" + " + ".join(parts) + ")"


Shape = tuple[Dim, ...]


def shape_str(shape: Shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


@dataclass(frozen=True, slots=True)
class TensorType:
    """dtype, shape and whether the value is a weakly typed Python scalar (NEP 50)."""

    dtype: str
    shape: Shape
    weak: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{'weak ' if self.weak else ''}{self.dtype}[{dims}]"
