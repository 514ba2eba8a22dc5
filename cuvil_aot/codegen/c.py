"""CPU kernels in C, one per fusion group.

Each kernel loops over its group's loop space. Every array it touches is an
operand: a base pointer and one element stride per loop variable, filled in by
the wrapper (pymodule.py) from the index map of the access, so views,
broadcasts and transposes cost nothing. The innermost loop exists twice: a
fast copy, taken when every operand that moves with the inner variable has unit
stride, that the C compiler vectorizes, and a general strided copy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cuvil_aot.codegen import ops_c
from cuvil_aot.codegen.writer import Writer
from cuvil_aot.ir.group import Dest, Group, Kind
from cuvil_aot.ir.indexing import IndexMap, identity, through
from cuvil_aot.ir.node import Node
from cuvil_aot.ir.ops import ELEMENTWISE, MOVEMENT, Op
from cuvil_aot.ir.types import Dim, Shape

AHEAD_STEP = 16  # elements per prefetch of a loop that prefetches ahead (64 bytes of float32)


@dataclass(frozen=True)
class Operand:
    """An array access: ``base`` (a parameter or buffer, viewed as ``view`` when a
    regrouping reshape reinterprets it) indexed by ``map``; or a store to ``dest``."""

    base: Node
    view: Shape | None
    map: IndexMap
    dest: Dest | None = None

    @property
    def dtype(self) -> str:
        return self.base.dtype if self.dest is None else self.dest.buffer.dtype

    def support(self) -> list[int]:
        """Loop variables this access moves with."""
        nloops = len(self.map[0].coeffs) if self.map else 0
        return [v for v in range(nloops) if any(a.uses(v) for a in self.map)]


@dataclass
class Kernel:
    name: str
    group: Group
    operands: list[Operand] = field(default_factory=list)
    scalars: dict[str, Node] = field(default_factory=dict)  # scalar parameters used
    symbols: set[str] = field(default_factory=set)
    struct: str = ""  # the arguments struct typedef
    code: str = ""  # the kernel function

    @property
    def nloops(self) -> int:
        return max(1, len(self.group.space.shape))


class _Body:
    """One straight-line region of a loop body: SSA locals, memoized per (node, map)."""

    def __init__(self, w: Writer, fast: bool, inner: int | None, prefix: str = "v"):
        self.w, self.fast, self.inner, self.prefix = w, fast, inner, prefix
        self.memo: dict[tuple[int, IndexMap], str] = {}
        self.used: set[int] = set()  # operands this body touches
        self.conds: set[str] = set()  # more conditions of the fast copy (see _split_loop)
        self.tiles: dict[int, str] = {}  # stores to these operands go to a tile buffer
        self.count = 0

    def local(self, ctype: str, expr: str) -> str:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        self.w.line(f"const {ctype} {name} = {expr};")
        return name


class KernelEmitter:
    def __init__(self, name: str, group: Group, buffers: set[int]):
        self.k = Kernel(name, group)
        self.group = group
        self.buffers = buffers
        self.own = {id(r) for r in group.roots}
        self.stage_vars: dict[int, str] = {}
        self.nloops = self.k.nloops
        # ROW kernels (see _row_body): per-row reciprocals of divisors, (value, its
        # "1/d is a normal float" flag) by id of the DIV; and values already stored to
        # an output row by the sum pass, operand index by id of the node.
        self.recips: dict[int, tuple[str, str]] = {}
        self.stashed: dict[int, int] = {}

    # Operands ------------------------------------------------------------------
    def operand(self, base: Node, view: Shape | None, m: IndexMap, dest: Dest | None = None) -> int:
        op = Operand(base, view, m, dest)
        for i, existing in enumerate(self.k.operands):
            if existing.base is base and existing.view == view and existing.map == m \
                    and existing.dest == dest:
                return i
        self.k.operands.append(op)
        return len(self.k.operands) - 1

    def offset(self, j: int, body: _Body) -> str:
        body.used.add(j)
        terms = []
        for v in self.k.operands[j].support():
            if v == body.inner and body.fast:
                terms.append(f"i{v}")
            else:
                terms.append(f"i{v} * s{j}_{v}")
        return " + ".join(terms) or "0"

    # Expressions ---------------------------------------------------------------
    def expr(self, node: Node, m: IndexMap, body: _Body) -> str:
        key = (id(node), m)
        if key in body.memo:
            return body.memo[key]
        value = self._expr(node, m, body)
        body.memo[key] = value
        return value

    def _expr(self, node: Node, m: IndexMap, body: _Body) -> str:
        if node.op is Op.CONST:
            return self.constant(node)
        if node.op is Op.PARAM and self.is_scalar(node):
            self.k.scalars[node.attrs[1]] = node
            return ops_c.cast(f"a->arg_{node.attrs[1]}", _scalar_dtype(node), node.dtype)
        if any(node is t for t in self.group.accumulators):
            return self.accumulator()
        if id(node) in self.stashed and m == identity(self.nloops):
            j = self.stashed[id(node)]
            return body.local(ops_c.CTYPE[node.dtype], f"p{j}[{self.offset(j, body)}]")
        if id(node) in self.recips and body.fast:  # x / d as x * (1 / d): see c_row.reciprocals
            rcp, ok = self.recips[id(node)]
            body.conds.add(ok)
            dividend = self.expr(node.srcs[0], m, body)
            return body.local(ops_c.CTYPE[node.dtype], f"({dividend} * {rcp})")
        if id(node) in self.stage_vars and m == self.per_row():
            return self.stage_vars[id(node)]
        if node.op is Op.PARAM or (id(node) in self.buffers and id(node) not in self.own):
            return self.load(node, None, m, body)
        if node.op in MOVEMENT:
            sub = through(node, m, self.nloops)
            if sub is None:
                return self.load(node.srcs[0], node.shape, m, body)
            return self.expr(node.srcs[0], sub, body)
        if node.op in ELEMENTWISE:
            args = [self.expr(s, m, body) for s in node.srcs]
            if node.op is Op.CAST:
                value = ops_c.cast(args[0], node.srcs[0].dtype, node.dtype)
            else:
                compute = node.srcs[0 if node.op is not Op.WHERE else 1].dtype
                try:
                    value = self.render(node.op, compute, args)
                except ops_c.Unsupported as exc:
                    raise ops_c.Unsupported(f"{exc} is not supported", node.span) from None
            return body.local(ops_c.CTYPE[node.dtype], value)
        raise ops_c.Unsupported(f"{node.op.name.lower()} inside a {self.group.kind.value} kernel")

    def render(self, op: Op, dtype: str, args: list[str]) -> str:
        """An op's expression (the GPU emitter renders with its own table)."""
        return ops_c.render(op, dtype, args)

    def accumulator(self) -> str:
        """A GEMM epilogue's accumulator value at the current element."""
        return "acc_row[i" + str(self.nloops - 1) + "]"

    def is_scalar(self, node: Node) -> bool:
        return node.type.weak and node.shape == ()

    def constant(self, node: Node) -> str:
        value = node.attrs[0]
        if isinstance(value, Dim):
            self.k.symbols.update(value.symbols)
            return ops_c.cast(value.c_expr("a->sym_{}"), "int64", node.dtype)
        return ops_c.literal(value, node.dtype)

    def load(self, base: Node, view: Shape | None, m: IndexMap, body: _Body) -> str:
        j = self.operand(base, view, m)
        value = f"p{j}[{self.offset(j, body)}]"
        return body.local(ops_c.CTYPE[base.dtype], value)

    def per_row(self) -> IndexMap:
        from cuvil_aot.ir.indexing import var_map

        return var_map(self.nloops, self.group.space.kept_axes)

    def store(self, root: Node, dest: Dest, m: IndexMap, value: str, body: _Body) -> None:
        j = self.operand(dest.buffer, None, _dest_map(root, dest, m), dest)
        storage = ops_c.STORAGE[dest.buffer.dtype]
        if j in body.tiles:
            body.w.line(f"{body.tiles[j]}[i{body.inner} - c0] = ({storage})({value});")
            return
        body.w.line(f"p{j}[{self.offset(j, body)}] = ({storage})({value});")


def _dest_map(root: Node, dest: Dest, m: IndexMap) -> IndexMap:
    if dest.buffer is root:
        return m
    return tuple(a.plus(dest.offset) if k == dest.axis else a for k, a in enumerate(m))


def _scalar_dtype(node: Node) -> str:
    return "float64" if node.dtype.startswith("float") else "int64"


def root_map(group: Group, root: Node) -> IndexMap:
    m = group.space.natural_map(root)
    return m if m is not None else identity(len(group.space.shape))


# Kernels ------------------------------------------------------------------------

REDUCE_INIT = {Op.SUM: "0", Op.PROD: "1"}
SUM_BLOCK = 4096  # elements per float partial sum: error stays O(block), not O(length)
REDUCE_PRAGMA = {Op.SUM: "+", Op.PROD: "*", Op.MAX: "max", Op.MIN: "min"}


def emit_kernel(name: str, group: Group, buffers: set[int]) -> Kernel:
    em = KernelEmitter(name, group, buffers)
    body = Writer(1)
    if group.kind is Kind.GEMM:
        _gemm_body(em, body)
        signature = (f"static void {name}(void *vctx, int64_t batch, int64_t r0, int64_t r1, "
                     f"int64_t c0, int64_t c1, const {_acc_type(group)} *acc, int64_t ld)")
    else:
        if group.kind is Kind.ROW:
            from cuvil_aot.codegen.c_row import row_body  # it builds on this module

            row_body(em, body)
        else:
            _elementwise_body(em, body)
        signature = f"static void {name}(void *vctx, int64_t t0, int64_t t1)"
    decl = Writer()
    _args_struct(em.k, decl)
    em.k.struct = decl.text()
    w = Writer()
    with w.block(signature):
        w.line(f"const {name}_args *a = (const {name}_args *)vctx;")
        _prologue(em.k, w)
        w.extend(body)
    em.k.code = w.text()
    return em.k


def _acc_type(group: Group) -> str:
    return ops_c.CTYPE[group.terms[0].dtype]


def _args_struct(k: Kernel, w: Writer) -> None:
    with w.block("typedef struct", f"}} {k.name}_args;"):
        w.line(f"int64_t n[{k.nloops}];")
        w.line(f"char *p[{max(1, len(k.operands))}];")
        w.line(f"int64_t s[{max(1, len(k.operands))}][{k.nloops}];")
        w.line("int64_t chunk, nchunk;")
        w.line("int stream;  /* outputs go out through cv_stream_* (kernel.h) */")
        for pname, node in sorted(k.scalars.items()):
            w.line(f"{ops_c.CTYPE[_scalar_dtype(node)]} arg_{pname};")
        for sym in sorted(k.symbols):
            w.line(f"int64_t sym_{sym};")


def _prologue(k: Kernel, w: Writer) -> None:
    for j, op in enumerate(k.operands):
        const = "" if op.dest is not None else "const "
        storage = ops_c.STORAGE[op.dtype]
        w.line(f"{const}{storage} *restrict p{j} = ({const}{storage} *)a->p[{j}];")
        for v in op.support():
            w.line(f"const int64_t s{j}_{v} = a->s[{j}][{v}];")


def _fast_condition(em: KernelEmitter, used: set[int], inner: int) -> str:
    checks = [f"s{j}_{inner} == 1" for j in sorted(used)
              if inner in em.k.operands[j].support()]
    return " && ".join(checks) or "1"


def _split_loop(em: KernelEmitter, w: Writer, var: int, lo: str, hi: str,
                fill: Callable[[_Body], None], pragma: str = "#pragma omp simd",
                ahead: Sequence[str] = ()) -> None:
    """The innermost loop over ``var``, once vectorizable (unit strides) and once strided.
    ``ahead``: prefetch statements (of column ``q``) the vectorizable copy issues once per
    AHEAD_STEP elements, in blocks of that many (see c_row._next_row)."""
    bodies = []
    for fast in (False, True):
        body = _Body(Writer(), fast, var)
        fill(body)
        bodies.append(body)
    cond = " && ".join([_fast_condition(em, bodies[0].used, var), *sorted(bodies[1].conds)])
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


def _extent(em: KernelEmitter, v: int) -> str:
    """A loop's trip count: a constant when the dimension is static (the C compiler then
    unrolls and vectorizes small fixed loops), else the run-time size."""
    shape = em.group.space.shape
    if v < len(shape) and shape[v].is_static:
        return str(shape[v].value)
    return f"a->n[{v}]"


def _decompose(em: KernelEmitter, w: Writer, var_axes: list[int], flat: str) -> None:
    """Loop variables i{axis} from a flat index over ``var_axes`` (last fastest)."""
    if not var_axes:
        return
    w.line(f"int64_t rem = {flat};")
    for axis in reversed(var_axes[1:]):
        extent = _extent(em, axis)
        w.line(f"const int64_t i{axis} = rem % {extent}; rem /= {extent};")
    w.line(f"const int64_t i{var_axes[0]} = rem;")


def _store_roots(em: KernelEmitter, body: _Body, roots: list[tuple[Node, Dest]]) -> None:
    for root, dest in roots:
        m = root_map(em.group, root)
        em.store(root, dest, m, em.expr(root, m, body), body)


def _elementwise_body(em: KernelEmitter, w: Writer) -> None:
    inner = em.nloops - 1
    roots = list(zip(em.group.roots, em.group.dests))
    streamed = _streams(em, roots)
    with w.block("for (int64_t t = t0; t < t1; t++)"):
        w.line("const int64_t row = t / a->nchunk;")
        w.line("const int64_t lo = (t % a->nchunk) * a->chunk;")
        w.line(f"const int64_t hi = cv_min64(lo + a->chunk, {_extent(em, inner)});")
        _decompose(em, w, list(range(inner)), "row")
        fill = lambda body: _store_roots(em, body, roots)  # noqa: E731
        if streamed:
            _stream_or_split(em, w, inner, roots, fill)
        else:
            _split_loop(em, w, inner, "lo", "hi", fill)
    if streamed:
        w.line("if (a->stream) cv_stream_fence();")


STREAMED = {"float32": "f32", "float64": "f64"}
COSTLY = frozenset({Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.TANH, Op.SIN, Op.COS, Op.POW})


def elementwise_tree(node: Node) -> list[Node]:
    """``node`` and what it computes from through elementwise ops (same loop index)."""
    seen, todo, out = set(), [node], []
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        if n.op in ELEMENTWISE:
            todo.extend(n.srcs)
    return out


def _streams(em: KernelEmitter, roots: list[tuple[Node, Dest]]) -> bool:
    """Whether large outputs go out with non-temporal stores: float outputs of cheap
    math, each stored along the inner loop. x * 0.5 + y on 16M float32: 3.90 -> 3.40 ms;
    the elementwise chain (tanh, exp) is bound by its math and got slower (4.37 -> 5.07)."""
    inner = em.nloops - 1
    moving = all(inner in Operand(d.buffer, None, _dest_map(r, d, root_map(em.group, r)),
                                  d).support() for r, d in roots)
    return moving and all(d.buffer.dtype in STREAMED for _, d in roots) and not any(
        n.op in COSTLY for r, _ in roots for n in elementwise_tree(r))


def _stream_or_split(em: KernelEmitter, w: Writer, var: int, roots: list[tuple[Node, Dest]],
                     fill: Callable[[_Body], None]) -> None:
    """With a->stream and unit strides, the loop over [lo, hi) in tiles of CV_STREAM_TILE
    computed into stack buffers and streamed out (kernel.h); else _split_loop's loops."""
    dests = {}
    for root, dest in roots:
        j = em.operand(dest.buffer, None, _dest_map(root, dest, root_map(em.group, root)), dest)
        dests[j] = dest.buffer.dtype
    body = _Body(Writer(), True, var)
    body.tiles = {j: f"tile{j}" for j in dests}
    fill(body)
    cond = _fast_condition(em, body.used | set(dests), var)
    tiles = "for (int64_t c0 = lo; c0 < hi; c0 += CV_STREAM_TILE)"
    with w.block(f"if (a->stream && {cond})"), w.block(tiles):
        w.line("const int64_t c1 = cv_min64(c0 + CV_STREAM_TILE, hi);")
        for j, dtype in dests.items():
            w.line(f"{ops_c.STORAGE[dtype]} tile{j}[CV_STREAM_TILE] __attribute__((aligned(64)));")
        w.line("#pragma omp simd")
        with w.block(f"for (int64_t i{var} = c0; i{var} < c1; i{var}++)"):
            w.extend(body.w)
        for j, dtype in dests.items():
            off = re.sub(rf"\bi{var}\b", "c0", em.offset(j, _Body(Writer(), True, var)))
            w.line(f"cv_stream_{STREAMED[dtype]}(&p{j}[{off}], tile{j}, c1 - c0);")
    with w.block("else"):
        _split_loop(em, w, var, "lo", "hi", fill)


def _extreme(dtype: str, high: bool) -> str:
    fam = ops_c.FAMILY[dtype]
    if fam in ("f", "d"):
        return "INFINITY" if high else "-INFINITY"
    bits = {"i32": "32", "i64": "64"}.get(fam)
    if bits is None:
        return "1" if high else "0"
    return f"INT{bits}_MAX" if high else f"INT{bits}_MIN"


def _gemm_body(em: KernelEmitter, w: Writer) -> None:
    nloops = em.nloops
    row, col = nloops - 2, nloops - 1
    if nloops == 3:
        w.line("const int64_t i0 = batch;")
    else:
        w.line("(void)batch;")
    roots = list(zip(em.group.roots, em.group.dests))
    with w.block(f"for (int64_t i{row} = r0; i{row} < r1; i{row}++)"):
        w.line(f"const {_acc_type(em.group)} *acc_row = acc + (i{row} - r0) * ld - c0;")
        _split_loop(em, w, col, "c0", "c1", lambda body: _store_roots(em, body, roots))
