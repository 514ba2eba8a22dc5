"""The expression emitter that the CPU (c.py, c_row.py) and GPU (cuda*.py) kernels share.

A kernel's operands are array accesses: a base pointer ``p{j}`` and one element stride
``s{j}_{v}`` per loop variable ``i{v}``. KernelEmitter turns the IR of a fusion group
into SSA locals of straight-line C, one Body (region) at a time, loading each operand
at its offset and storing the roots to their destinations; the GPU emitter subclasses
it where CUDA differs (ops table, offsets, vector lanes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cuvil_aot.compiler.codegen import gather_access, ops_c, scatter_store
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Dest, Group
from cuvil_aot.compiler.ir.indexing import (
    ONE,
    ZERO,
    IndexMap,
    identity,
    through,
    unit_free,
    var_map,
)
from cuvil_aot.compiler.ir.node import Node
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, MOVEMENT, Op
from cuvil_aot.compiler.ir.types import Dim, Shape

# Ops costly enough that recomputing them costs more than a store and a load from cache.
COSTLY = frozenset({Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.TANH, Op.ERF, Op.SIN, Op.COS,
                    Op.POW,
                    *ops_c.LIBM})


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
    scalars: dict[str, Node] = field(default_factory=dict)  # by field: arg_x, host_0
    symbols: set[str] = field(default_factory=set)
    gathers: dict[str, tuple[int, int]] = field(default_factory=dict)  # a->g{j}_{axis}: (j, axis)
    merge: bool = False  # the launcher may fold the two innermost loops (c.mergeable)
    ramps: bool = False  # reads an index ramp at its loop variables (KernelEmitter.ramp)
    struct: str = ""  # the arguments struct typedef
    code: str = ""  # the kernel function

    @property
    def nloops(self) -> int:
        return max(1, len(self.group.space.shape))


class Body:
    """One straight-line region of a loop body: SSA locals, memoized per (node, map).

    ``fast``: the region is the vectorizable copy of loop ``inner``, where every operand
    that moves with it has unit stride (c_loops.split_loop)."""

    def __init__(self, w: Writer, fast: bool, inner: int | None, prefix: str = "v"):
        self.w, self.fast, self.inner, self.prefix = w, fast, inner, prefix
        self.memo: dict[tuple[int, IndexMap], str] = {}
        self.used: set[int] = set()  # operands this body touches
        self.conds: set[str] = set()  # more conditions of the fast copy (see split_loop)
        self.tiles: dict[int, str] = {}  # stores to these operands go to a tile buffer
        self.count = 0

    def local(self, ctype: str, expr: str) -> str:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        self.w.line(f"const {ctype} {name} = {expr};")
        return name


class KernelEmitter:
    language: ops_c.CLanguage = ops_c.C  # the op table (the GPU emitter has its own)

    def __init__(self, name: str, group: Group, buffers: set[int],
                 hoisted: dict[int, str] | None = None):
        self.k = Kernel(name, group)
        self.group = group
        self.buffers = buffers
        self.hoisted = hoisted or {}  # values the wrapper computes (host_scalars.py)
        self.own = {id(r) for r in group.roots}
        self.stage_vars: dict[int, str] = {}
        self.nloops = self.k.nloops
        # ROW kernels (see c_row.row_body): per-row reciprocals of divisors, (value, its
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

    def offset(self, j: int, body: Body) -> str:
        body.used.add(j)
        terms = []
        for v in self.k.operands[j].support():
            if v == body.inner and body.fast:
                terms.append(f"i{v}")
            else:
                terms.append(f"i{v} * s{j}_{v}")
        return " + ".join(terms) or "0"

    # Expressions ---------------------------------------------------------------
    def expr(self, node: Node, m: IndexMap, body: Body) -> str:
        key = (id(node), m)
        if key in body.memo:
            return body.memo[key]
        value = self._expr(node, m, body)
        body.memo[key] = value
        return value

    def _expr(self, node: Node, m: IndexMap, body: Body) -> str:
        if id(node) in self.hoisted:
            return self.scalar(self.hoisted[id(node)], node)
        if node.op is Op.CONST:
            return self.constant(node)
        if node.op is Op.PARAM and self.is_scalar(node):
            return self.scalar(f"arg_{node.attrs[1]}", node)
        if any(node is t for t in self.group.accumulators):
            return self.accumulator()
        if id(node) in self.stashed and m == identity(self.nloops):
            j = self.stashed[id(node)]
            return body.local(ops_c.CTYPE[node.dtype],
                              ops_c.load(node.dtype, f"p{j}[{self.offset(j, body)}]"))
        if id(node) in self.recips and body.fast:  # x / d as x * (1 / d): see row_reciprocals
            rcp, ok = self.recips[id(node)]
            body.conds.add(ok)
            dividend = self.expr(node.srcs[0], m, body)
            return body.local(ops_c.CTYPE[node.dtype], f"({dividend} * {rcp})")
        if id(node) in self.stage_vars and self.is_per_row(m):
            return self.stage_vars[id(node)]
        if node.op is Op.PARAM or (id(node) in self.buffers and id(node) not in self.own):
            return self.load(node, None, m, body)
        if node.op is Op.IOTA:
            return self.ramp(m, body)
        if node.op is Op.GATHER:
            return gather_access.emit(self, node, m, body)
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
                    value = self.language.render(node.op, compute, args)
                except ops_c.Unsupported as exc:
                    raise ops_c.Unsupported(f"{exc} is not supported", node.span) from None
            return body.local(ops_c.CTYPE[node.dtype], value)
        raise ops_c.Unsupported(f"{node.op.name.lower()} inside a {self.group.kind.value} kernel")

    def ramp(self, m: IndexMap, body: Body) -> str:
        """An index ramp (np.arange) at ``m``: its element's index, the map's value, so no
        kernel fills a buffer of it (a causal mask reads it as ``j - i``). A ramp read
        through a regrouping reshape is a buffer, the ramp's own 1-D kernel."""
        if m == identity(1) and self.nloops == 1:
            return body.local("int64_t", self.loop_index(body))
        self.k.ramps = True  # the loop variables are the logical indices: no merged loops
        (a,) = m
        terms = [f"(int64_t)i{v}" if c == ONE else f"(int64_t)i{v} * {self.dim(c)}"
                 for v, c in enumerate(a.coeffs) if c != ZERO]
        if a.const != ZERO:
            terms.append(self.dim(a.const))
        return body.local("int64_t", " + ".join(terms) or "(int64_t)0")

    def dim(self, d: Dim) -> str:
        """A dimension as an int64 C expression (symbols from the arguments struct)."""
        self.k.symbols.update(d.symbols)
        return f"(int64_t)({d.c_expr('a->sym_{}')})"

    def loop_index(self, body: Body) -> str:
        """The index of a 1-D kernel's current element."""
        return "(int64_t)i0"

    def fetch(self, j: int, offset: str, ok: str, body: Body) -> str:
        """Operand j at ``offset`` where ``ok`` holds, else 0 (a gather's table)."""
        return gather_access.guarded_load(self, j, offset, ok, body)

    def report(self, ok: str, value: str, axis: int, size: str, body: Body,
               flag: int) -> None:
        """Where ``ok`` fails, index ``value`` of ``axis`` (of ``size``) is out of range."""
        body.w.line(gather_access.C_REPORT.format(ok=ok, value=value, axis=axis, size=size,
                                                  flag=flag))

    def accumulator(self) -> str:
        """A GEMM epilogue's accumulator value at the current element."""
        return "acc_row[i" + str(self.nloops - 1) + "]"

    def scalar(self, field_name: str, node: Node) -> str:
        """A number the wrapper passes in the arguments struct (a scalar parameter, a
        hoisted value), as ``node``'s dtype."""
        self.k.scalars[field_name] = node
        return ops_c.cast(f"a->{field_name}", scalar_dtype(node), node.dtype)

    def is_scalar(self, node: Node) -> bool:
        return node.type.weak and node.shape == ()

    def constant(self, node: Node) -> str:
        value = node.attrs[0]
        if isinstance(value, Dim):
            return ops_c.cast(self.dim(value), "int64", node.dtype)
        return ops_c.literal(value, node.dtype)

    def load(self, base: Node, view: Shape | None, m: IndexMap, body: Body) -> str:
        j = self.operand(base, view, m)
        value = ops_c.load(base.dtype, f"p{j}[{self.offset(j, body)}]")
        return body.local(ops_c.CTYPE[base.dtype], value)

    def per_row(self) -> IndexMap:
        return var_map(self.nloops, self.group.space.kept_axes)

    def is_per_row(self, m: IndexMap) -> bool:
        shape = self.group.space.shape
        return unit_free(m, shape) == unit_free(self.per_row(), shape)

    def store(self, root: Node, dest: Dest, m: IndexMap, value: str, body: Body) -> None:
        if dest.scatter is not None:  # at positions from index arrays (scatter_store.py)
            scatter_store.store(self, dest, m, value, body)
            return
        j = self.operand(dest.buffer, None, dest_map(root, dest, m), dest)
        stored = ops_c.store(dest.buffer.dtype, value,
                             dest.buffer.dtype == root.dtype and ops_c.rounded_to(root))
        if j in body.tiles:
            body.w.line(f"{body.tiles[j]}[i{body.inner} - c0] = {stored};")
            return
        body.w.line(f"p{j}[{self.offset(j, body)}] = {stored};")


def store_roots(em: KernelEmitter, body: Body, roots: list[tuple[Node, Dest]]) -> None:
    """Each root computed at its own index map and stored to its destination."""
    for root, dest in roots:
        m = root_map(em.group, root)
        em.store(root, dest, m, em.expr(root, m, body), body)


def dest_map(root: Node, dest: Dest, m: IndexMap) -> IndexMap:
    """The index map of a store of ``root`` (at ``m``) into its destination buffer, which
    may hold it at an offset along one axis (a concatenation)."""
    if dest.buffer is root:
        return m
    if dest.scatter is not None:  # the affine part of a scatter's store
        return scatter_store.dest_map(dest.scatter, m)
    if dest.region is not None:  # an assignment's region (passes/inplace.py)
        return tuple(a.scaled(st).plus(s0) for a, s0, st in zip(m, *dest.region))
    return tuple(a.plus(dest.offset) if k == dest.axis else a for k, a in enumerate(m))


def root_map(group: Group, root: Node) -> IndexMap:
    m = group.space.natural_map(root)
    return m if m is not None else identity(len(group.space.shape))


def scalar_dtype(node: Node) -> str:
    """The dtype a scalar parameter is passed in: double or int64_t."""
    return "float64" if node.dtype.startswith("float") else "int64"


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
