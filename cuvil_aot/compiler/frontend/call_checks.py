"""Errors Python and NumPy raise on numbers the call knows before any kernel runs.

``n / k`` with ``k: int`` raises ZeroDivisionError where k is 0 (operators.py), and
``x + n`` with ``x`` int8 raises NumPy's OverflowError where n is 300 (NEP 50:
builder.elementwise); a number known at compile time is checked now, one known only at
the call (an int or float argument, a dimension, arithmetic on them) is checked by the
wrapper there (ir/run_time.CallCheck, emitted by codegen/run_time_sizes.py beside the
run-time sizes), raising the exception and message Python (NumPy) raises.

The op that finds the error is built deep in the frontend, so its check goes to the
function being lowered (``recording``, as construct.assuming collects assumptions),
into the interpreter's run-time records: branches and loops see what their code
recorded there. Python runs a branch only where its condition holds, a loop's body only
where the loop has a trip, so they ``guard`` those checks by that. A check on values
known only as the kernels run (array data, a run-time loop's variable) is not made:
there the result is what the kernels compute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from cuvil_aot.compiler.ir.node import Node, toposort
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, Op
from cuvil_aot.compiler.ir.run_time import CallCheck, Text
from cuvil_aot.compiler.ir.types import Dim, TensorType

_RECORDS: ContextVar[list[Any] | None] = ContextVar("cuvil_aot_call_checks", default=None)


@contextmanager
def recording(records: list[Any]) -> Iterator[None]:
    """While lowering one function: checks go to ``records`` (its run-time records)."""
    token = _RECORDS.set(records)
    try:
        yield
    finally:
        _RECORDS.reset(token)


def known_before_the_kernels(value: Node) -> bool:
    """Whether the wrapper computes 0-d ``value`` once per call, before any kernel: from
    constants, dimensions and int arguments, not from array data nor a run-time loop's
    stand-ins (``_loop{n}_*``, which change each iteration)."""
    return not value.shape and all(
        n.op is Op.CONST or (n.op is Op.PARAM and n.type.weak
                             and not str(n.attrs[1]).startswith("_loop"))
        or (n.op in ELEMENTWISE and not n.shape) for n in toposort([value]))


def always(x: Node, holds: Callable[[Any], bool]) -> bool:
    """Whether ``holds`` is true of every value 0-d ``x`` may take at the call: ``x`` a
    constant, or a polynomial of sizes whose sign is known (1, 2, ... where it is known
    positive, 0, 1, ... where known nonnegative): then a check of it is never needed."""
    if x.op is not Op.CONST:
        return False
    value = x.attrs[0]
    if isinstance(value, Dim):
        if value.known_positive():
            return bool(holds(1))
        return value.known_nonnegative() and bool(holds(0)) and bool(holds(1))
    return bool(holds(value))


def message_of(fn: Callable[..., Any], *args: Any) -> str:
    """What the running Python (NumPy) says where ``fn(*args)`` fails: the message a
    check of that error raises."""
    try:
        fn(*args)
    except (ValueError, OverflowError) as exc:
        return str(exc)
    raise RuntimeError(f"{fn.__name__}{args} did not raise")  # a cuvil_aot bug


def record(cond: Node, error: str, message: str | Text) -> None:
    """Raise ``error(message)`` at the call where ``cond`` holds; nothing where ``cond``
    or a number of the message is known only as the kernels run, or outside lowering."""
    records = _RECORDS.get()
    numbers = [p for p in message if isinstance(p, Node)] if not isinstance(message, str) else []
    if records is not None and all(known_before_the_kernels(v) for v in (cond, *numbers)):
        records.append(CallCheck.of(cond, error, message))


def guard(records: list[Any], mark: int, taken: Node) -> None:
    """The checks recorded since ``mark`` made only where ``taken`` (a 0-d bool) holds:
    code Python runs only then recorded them; dropped where ``taken`` is known only as
    the kernels run."""
    kept = []
    for entry in records[mark:]:
        if not isinstance(entry, CallCheck):
            kept.append(entry)
            continue
        both = Node(Op.AND, TensorType("bool", ()), (taken, entry.cond), span=entry.cond.span)
        if known_before_the_kernels(both):
            kept.append(CallCheck.of(both, entry.error, entry.message))
    records[mark:] = kept
