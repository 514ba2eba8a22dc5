"""A gather's value inside a kernel (the CPU's and the GPU's): its index arrays computed
inline at their part of the index map, each index wrapped once and checked, and the table
loaded at the affine part of the map plus index * stride along each gathered axis.

The stride of a gathered axis is an argument of the kernel (``a->g{j}_{axis}``, filled
by launch.fill_args from the table's strides); the table's operand map holds 0 on the
gathered axes (indexing.gather_map), so the loops' unit-stride tests
(c_loops.fast_condition) see only the axes that move affinely. An index out of range
loads nothing (the value is 0) and reports itself once, through ``a->gerr`` (int64_t[4]:
set, index, axis, size), which the wrapper turns into NumPy's IndexError after the
kernels (pymodule.py, gpu_wrapper.py).

Before (``table[ids]`` with table f32[V,D], ids i32[B]; loop variables i0, i1)::

    v0 = ids[i0]

After::

    const int64_t v1 = (int64_t)(v0);
    const int64_t v2 = v1 < 0 ? v1 + a->sym_V : v1;
    const cv_bool v3 = (uint64_t)v2 < (uint64_t)a->sym_V;
    if (!v3) <report v1, axis 0, size V>
    const float v4 = v3 ? (float)p1[i1 * s1_1 + v2 * a->g1_0] : (float)0;
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cuvil_aot.compiler.codegen import ops_c
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.indexing import IndexMap, gather_map, is_unit_reshape
from cuvil_aot.compiler.ir.node import Function, Node, toposort
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, Op
from cuvil_aot.compiler.ir.types import Dim

if TYPE_CHECKING:
    from cuvil_aot.compiler.codegen.kernel_emitter import Body, Kernel, KernelEmitter

# The report of an index out of range (CPU): the first one wins the flag, then writes.
C_REPORT = ("if (!{ok}) {{ int64_t z_ = 0; if (__atomic_compare_exchange_n(&a->gerr[0], "
            "&z_, {flag}, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {{ a->gerr[1] = {value}; "
            "a->gerr[2] = {axis}; a->gerr[3] = {size}; }} }}")
CUDA_REPORT = ("if (!{ok} && atomicCAS((unsigned long long *)&a->gerr[0], 0ull, {flag}ull) == 0ull)"
               " {{ a->gerr[1] = {value}; a->gerr[2] = {axis}; a->gerr[3] = {size}; }}")


def emit(em: KernelEmitter, node: Node, m: IndexMap, body: Body) -> str:
    """The value of gather ``node`` at index map ``m``."""
    table, axis = node.srcs[0], node.attrs[0]
    n = len(node.srcs[1].shape)
    base, view = table, None
    if table.op is Op.RESHAPE and table.srcs[0].op is Op.PARAM:  # a parameter, flattened
        base, view = table.srcs[0], table.shape  # (C-contiguous: compiled.lower_signature)
    j = em.operand(base, view, gather_map(node, m, em.nloops))
    terms, oks = [], []
    for k, ix in enumerate(node.srcs[1:]):
        value = em.expr(ix, m[axis:axis + n], body)
        size = size_expr(em, table.shape[axis + k])
        raw = body.local("int64_t", f"(int64_t)({value})")
        if ix.dtype == "uint64":  # no negative values: never wrapped
            pos, ok = raw, body.local("cv_bool", f"(uint64_t)({value}) < (uint64_t)({size})")
        else:
            pos = body.local("int64_t", f"{raw} < 0 ? {raw} + ({size}) : {raw}")
            ok = body.local("cv_bool", f"(uint64_t){pos} < (uint64_t)({size})")
        em.report(ok, raw, node.attrs[1][k], size, body, flag(node))
        field = f"g{j}_{axis + k}"
        em.k.gathers[field] = (j, axis + k)
        terms.append(f"{pos} * a->{field}")
        oks.append(ok)
    offset = " + ".join([em.offset(j, body), *terms])
    return em.fetch(j, offset, " && ".join(oks), body)


def flag(node: Node) -> int:
    """What a gather sets gerr[0] to: 2 for np.take's (its message differs), else 1."""
    return 2 if node.attrs[2] else 1


def size_expr(em: KernelEmitter, d: Dim) -> str:
    em.k.symbols.update(d.symbols)
    return d.c_expr("a->sym_{}")


def guarded_load(em: KernelEmitter, j: int, offset: str, ok: str, body: Body) -> str:
    """Operand j at ``offset`` where ``ok``, else 0 (no load)."""
    dtype = em.k.operands[j].dtype
    ctype = ops_c.CTYPE[dtype]
    element = ops_c.load(dtype, f"p{j}[{offset}]")
    return body.local(ctype, f"{ok} ? ({ctype}){element} : ({ctype})0")


def fields(k: Kernel, w: Writer) -> None:
    """The argument struct's fields of a kernel's gathers: the strides along the gathered
    axes, and where a bad index is reported (the same text in C and C++)."""
    for name in sorted(k.gathers):
        w.line(f"int64_t {name};")
    if k.gathers:
        w.line("int64_t *gerr;  /* set, index, axis, size: an index out of range */")


def index_error(w: Writer, gerr: str) -> None:
    """The wrapper's check after the kernels: NumPy's IndexError for a reported index."""
    with w.block(f"if ({gerr}[0] == 2 && {gerr}[3] == 0)"):  # np.take's own message
        w.line('PyErr_SetString(PyExc_IndexError, "cannot do a non-empty take from an empty '
               'axes.");')
        w.line("goto done;")
    with w.block(f"if ({gerr}[0])"):
        w.line('PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %lld '
               f'with size %lld", (long long){gerr}[1], (long long){gerr}[2], '
               f"(long long){gerr}[3]);")
        w.line("goto done;")


# The GPU wrapper's flag (gpu_wrapper.py): a framework int64 array of 4 zeroed on the
# call's stream before the launches, read back after them. The read waits for the
# stream: a call that gathers returns once its kernels are done (one copy of 32 bytes
# and a stream synchronize more than a call that does not).
GPU_DECLARE = ("cv_gpu_array gflag; int gflag_held = 0; int64_t gerr_host[4] = {0, 0, 0, 0}; "
               "int64_t *gerr = NULL; (void)gerr;")
GPU_RELEASE = "if (gflag_held) api->gpu->release(&gflag);"


def gpu_flag(w: Writer) -> None:
    """The flag of a call that gathers, zeroed on the stream (before the launches)."""
    with w.block(""):
        w.line("int64_t gshape[1] = {4};")
        w.line("if (api->gpu->empty(&ga[first], CV_DT_INT64, 1, gshape, &gflag) < 0) goto done;")
        w.line("gflag_held = 1;")
        w.line("gerr = (int64_t *)gflag.data;")
        w.line("if (api->gpu->zero(dev, gerr, sizeof gerr_host, stream) < 0) goto done;")


def gpu_flag_check(w: Writer) -> None:
    """After the launches: the flag read back, NumPy's IndexError where it is set."""
    w.line("if (api->gpu->read(dev, gerr_host, gerr, sizeof gerr_host, stream) < 0) goto done;")
    index_error(w, "gerr_host")


def gpu_int_checks(w: Writer, fn: Function, hoisted: dict[int, str],
                   params: dict[int, int]) -> None:
    """The GPU wrapper's check of the int indices it knows (constants, int arguments,
    hoisted numbers) on the host, before the launches, and of index arrays that are
    parameters where the kernels would evaluate none of them (a result empty along
    another axis: copied to the host, only then): NumPy's IndexError in both cases."""
    param_checks(w, fn, {}, hoisted, "gerr_host", "")
    for use in _index_uses(fn):
        count = " * ".join(dim(d) for d in use.indices[0].shape) or "1"
        visited = " * ".join(dim(d) for d in use.domain) or "1"
        for k, base in enumerate(map(_base, use.indices)):
            guard = _branch_guard(base, hoisted)
            base = _base(base.srcs[1]) if guard is not None else base
            if base.op is Op.PARAM and not base.type.weak and id(base) in params:
                _gpu_param_check(w, params[id(base)], base, count, f"(({guard}) ? ({visited}) : 1)"
                                 if guard is not None else visited, dim(use.sizes[k]),
                                 use.axes[k], use.flag)
    index_error(w, "gerr_host")


@dataclass
class _IndexUse:
    """A gather's or a scatter's index operands and what they index."""

    indices: tuple[Node, ...]
    sizes: list[Dim]  # per index: the size of the axis it indexes
    axes: tuple[int, ...]
    flag: int  # the report's kind (flag())
    domain: tuple[Dim, ...]  # the elements the kernels visit: none, no index checked


def _index_uses(fn: Function) -> list[_IndexUse]:
    uses = []
    for node in toposort(fn.outputs):
        if node.op is Op.GATHER:
            table, axis = node.srcs[0], node.attrs[0]
            indices = node.srcs[1:]
            uses.append(_IndexUse(indices, [table.shape[axis + k] for k in range(len(indices))],
                                  node.attrs[1], flag(node), node.shape))
        elif node.op is Op.SCATTER:  # checked before the kernels write anything, as NumPy
            uses.append(_IndexUse(node.srcs[2:], [node.shape[a] for a in node.attrs[0]],
                                  node.attrs[0], 1, node.srcs[1].shape))
    return uses


def _branch_guard(ix: Node, hoisted: dict[int, str]) -> str | None:
    """Where ``ix`` is ``where(taken, index, 0)`` (a gather in a branch Python may not run,
    frontend/branches.py) and the wrapper knows ``taken``: it in C."""
    if ix.op is not Op.WHERE or _placed(ix.srcs[2], hoisted).op is not Op.CONST:
        return None
    taken = _placed(ix.srcs[0], hoisted)
    if taken.op is Op.PARAM and taken.type.weak and not taken.shape:
        return f"(c->arg_{taken.attrs[1]} != 0)"
    return f"(c->{hoisted[id(taken)]} != 0)" if id(taken) in hoisted else None


def _placed(node: Node, hoisted: dict[int, str]) -> Node:
    """``node`` before the broadcasts and casts that place it (to a hoisted number)."""
    while id(node) not in hoisted and node.op in (Op.BROADCAST, Op.CAST):
        node = node.srcs[0]
    return node


def _base(ix: Node) -> Node:
    """An index operand before the broadcasts and unit reshapes that place it."""
    while ix.op is Op.BROADCAST or (ix.op is Op.RESHAPE and is_unit_reshape(
            ix.srcs[0].shape, ix.shape)):
        ix = ix.srcs[0]
    return ix


def param_checks(w: Writer, fn: Function, params: dict[int, int],
                 hoisted: dict[int, str], gerr: str = "gerr", stop: str = "return 0;",
                 host: Callable[[Node], str] | None = None) -> None:
    """The CPU exec's check of the index arrays of gathers and scatters that are parameters
    (and of int indices the wrapper knows: constants, int arguments, numbers it computes,
    host_scalars.py), before the kernels: in C order, as NumPy checks them (the first bad
    index is the one named), and also where the kernels would evaluate none of them (a
    result empty along another axis); a scatter's, before anything is written. ``host``
    renders an int the C code computes from int arguments and constants (a run-time
    loop's ``y[t + k] = v``, checked each iteration)."""
    for use in _index_uses(fn):
        count = " * ".join(dim(d) for d in use.indices[0].shape) or "1"
        for k, base in enumerate(map(_base, use.indices)):
            guard = _branch_guard(base, hoisted)
            if guard is not None:  # in a branch Python may not run (frontend/branches.py)
                base = _base(base.srcs[1])
                if base.op is Op.PARAM and not base.type.weak and id(base) in params:
                    with w.block(f"if ({guard})"):
                        _param_check(w, params[id(base)], base, count, dim(use.sizes[k]),
                                     use.axes[k], use.flag)
                continue
            known = None
            if base.op is Op.CONST:  # an int beside index arrays: checked even where
                value = base.attrs[0]  # they are empty, as NumPy does
                known = dim(value) if isinstance(value, Dim) else str(int(value))
            elif base.op is Op.PARAM and base.type.weak and not base.shape:  # an int argument
                known = f"c->arg_{base.attrs[1]}"
            elif id(base) in hoisted:
                known = f"(int64_t)c->{hoisted[id(base)]}"
            elif host is not None and _is_host_int(base):
                with w.block(""):
                    _int_check(w, host(base), dim(use.sizes[k]), use.axes[k], use.flag, gerr,
                               stop)
                continue
            if known is not None:
                _int_check(w, known, dim(use.sizes[k]), use.axes[k], use.flag, gerr, stop)
            if base.op is not Op.PARAM or base.type.weak or id(base) not in params:
                continue
            _param_check(w, params[id(base)], base, count, dim(use.sizes[k]), use.axes[k],
                         use.flag)


def _is_host_int(node: Node) -> bool:
    """A 0-d int computed from int arguments and constants only."""
    return not node.shape and all(
        n.op is Op.CONST or (n.op is Op.PARAM and n.type.weak)
        or (n.op in ELEMENTWISE and not n.shape) for n in toposort([node]))


def dim(d: Dim) -> str:
    """A dimension in the wrapper (as launch.dim)."""
    return d.c_expr("S_{}")


def _int_check(w: Writer, value: str, size: str, axis: int, set_to: int, gerr: str,
               stop: str) -> None:
    with w.block(""):
        w.line(f"const int64_t v = {value}, size = {size};")
        with w.block(f"if (!{gerr}[0] && (v < -size || v >= size))"):
            w.line(f"{gerr}[0] = {set_to}; {gerr}[1] = v; {gerr}[2] = {axis}; "
                   f"{gerr}[3] = size;")
    if stop:
        w.line(f"if ({gerr}[0]) {stop}")


def _param_check(w: Writer, i: int, param: Node, count: str, size: str, axis: int,
                 set_to: int) -> None:
    ctype = ops_c.CTYPE[param.dtype]
    with w.block(f"if (!gerr[0] && ({count}) > 0)"):
        w.line(f"const char *b = PyArray_BYTES(in[{i}]); (void)b;")
        loops = [f"for (npy_intp k{d} = 0; k{d} < PyArray_DIM(in[{i}], {d}) && !gerr[0]; "
                 f"k{d}++)" for d in range(param.type.ndim)]
        offset = " + ".join(f"k{d} * PyArray_STRIDE(in[{i}], {d})"
                            for d in range(param.type.ndim)) or "0"
        for line in loops:
            w.line(line)
        with w.block(""):
            w.line(f"const int64_t v = (int64_t)*(const {ctype} *)(b + {offset});")
            w.line(f"const int64_t size = {size};")
            bad = "(uint64_t)v >= (uint64_t)size" if param.dtype == "uint64" else \
                "v < -size || v >= size"
            with w.block(f"if ({bad})"):
                w.line(f"gerr[0] = {set_to}; gerr[1] = v; gerr[2] = {axis}; gerr[3] = size;")
    w.line("if (gerr[0]) return 0;")


def _gpu_param_check(w: Writer, i: int, param: Node, count: str, visited: str, size: str,
                     axis: int, set_to: int) -> None:
    """Index array ``ga[i]`` read back and checked in C order, where no kernel reads it."""
    ctype = ops_c.CTYPE[param.dtype]
    bad = "(uint64_t)v >= (uint64_t)size" if param.dtype == "uint64" else "v < -size || v >= size"
    with w.block(f"if (!gerr_host[0] && ({visited}) == 0 && ({count}) > 0)"):
        w.line(f"cv_gpu_array cp = ga[{i}]; PyObject *held = NULL;")
        w.line(f"if (!cv_gpu_is_c_contiguous(&cp) && !(held = api->gpu->contiguous(argv[{i}], "
               f"&ga[{i}], &cp))) goto done;")
        w.line(f"const size_t n = (size_t)({count});")
        w.line(f"{ctype} *h = ({ctype} *)malloc(n * sizeof *h);")
        w.line("int r = h ? api->gpu->read(dev, h, cp.data, n * sizeof *h, stream) : -1;")
        w.line("if (!h) PyErr_NoMemory();")
        with w.block("for (size_t k = 0; r >= 0 && k < n && !gerr_host[0]; k++)"):
            w.line(f"const int64_t v = (int64_t)h[k], size = {size};")
            with w.block(f"if ({bad})"):
                w.line(f"gerr_host[0] = {set_to}; gerr_host[1] = v; gerr_host[2] = {axis}; "
                       "gerr_host[3] = size;")
        w.line("free(h);")
        w.line("if (held) { api->gpu->release(&cp); Py_DECREF(held); }")
        w.line("if (r < 0) goto done;")
