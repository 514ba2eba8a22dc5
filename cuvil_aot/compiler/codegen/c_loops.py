"""The loops of a CPU kernel: trip counts, loop variables from a flat index, and the
innermost loop emitted twice, once vectorizable and once strided (split_loop)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cuvil_aot.compiler.codegen.kernel_emitter import Body, KernelEmitter
from cuvil_aot.compiler.codegen.writer import Writer

AHEAD_STEP = 16  # elements per prefetch of a loop that prefetches ahead (64 bytes of float32)


def extent(em: KernelEmitter, v: int) -> str:
    """A loop's trip count: a constant when the dimension is static (the C compiler then
    unrolls and vectorizes small fixed loops), else the run-time size."""
    shape = em.group.space.shape
    if v < len(shape) and shape[v].is_static:
        return str(shape[v].value)
    return f"a->n[{v}]"


def decompose(em: KernelEmitter, w: Writer, var_axes: list[int], flat: str,
              trips: dict[int, str] | None = None, steps: bool = False) -> None:
    """Loop variables i{axis} from a flat index over ``var_axes`` (last fastest);
    ``trips`` overrides the trip counts of some axes. ``steps``: variables that ``advance``
    steps, so a loop over consecutive flat indices pays the divisions once."""
    if not var_axes:
        return
    kind = "int64_t" if steps else "const int64_t"
    w.line(f"int64_t rem = {flat};")
    for axis in reversed(var_axes[1:]):
        n = (trips or {}).get(axis) or extent(em, axis)
        w.line(f"{kind} i{axis} = rem % {n}; rem /= {n};")
    w.line(f"{kind} i{var_axes[0]} = rem;")


def advance(em: KernelEmitter, w: Writer, var_axes: list[int],
            trips: dict[int, str] | None = None) -> None:
    """The next flat index's variables (``decompose`` with ``steps``): the last axis
    steps, carrying."""
    if not var_axes:
        return
    for axis in reversed(var_axes[1:]):
        n = (trips or {}).get(axis) or extent(em, axis)
        w.line(f"if (++i{axis} == {n}) {{ i{axis} = 0;")
    w.line(f"++i{var_axes[0]};" + "}" * (len(var_axes) - 1))


def fast_condition(em: KernelEmitter, used: set[int], inner: int) -> str:
    """C condition: every operand of ``used`` that moves with ``inner`` has unit stride."""
    checks = [f"s{j}_{inner} == 1" for j in sorted(used)
              if inner in em.k.operands[j].support()]
    return " && ".join(checks) or "1"


def split_loop(em: KernelEmitter, w: Writer, var: int, lo: str, hi: str,
               fill: Callable[[Body], None], pragma: str = "#pragma omp simd",
               ahead: Sequence[str] = ()) -> None:
    """The innermost loop over ``var``, once vectorizable (unit strides) and once strided.
    ``ahead``: prefetch statements (of column ``q``) the vectorizable copy issues once per
    AHEAD_STEP elements, in blocks of that many (see c_row._next_row)."""
    bodies = []
    for fast in (False, True):
        body = Body(Writer(), fast, var)
        fill(body)
        bodies.append(body)
    cond = " && ".join([fast_condition(em, bodies[0].used, var), *sorted(bodies[1].conds)])
    loop = f"for (int64_t i{var} = {lo}; i{var} < {hi}; i{var}++)"
    with w.block(f"if ({cond})"):
        start = lo
        if ahead:
            w.line(f"int64_t q = {lo};")
            with w.block(f"for (; q + {AHEAD_STEP} <= {hi}; q += {AHEAD_STEP})"):
                for line in ahead:
                    w.line(line)
                if pragma:
                    w.line(pragma)
                with w.block(f"for (int64_t i{var} = q; i{var} < q + {AHEAD_STEP}; i{var}++)"):
                    w.extend(bodies[1].w)
            start = "q"
        if pragma:
            w.line(pragma)
        with w.block(f"for (int64_t i{var} = {start}; i{var} < {hi}; i{var}++)"):
            w.extend(bodies[1].w)
    with w.block("else"), w.block(loop):
        w.extend(bodies[0].w)
