"""A run-time loop (ir/loop.py) in the launch sequence: its body's kernels run n times.

Fusion leaves one Kind.LOOP group per loop; here it becomes a span of the signature's
kernel list: two copy kernels per carried value (its initial value into the result's
buffer, or into the body output's: one runs, picked by the parity of n), then the
body's kernels, which the exec function (CPU) or the GPU launch sequence runs inside
a C loop. The index is a field of a copy of the call struct (``lc0.arg__loop0_t``) the
body's kernels read as an int argument. Each carried value has two buffers, the
result's and the body output's: iteration ``it`` reads ``L0cur[j]`` and writes
``L0nxt[j]``, the two swapped each iteration and picked so that the last one writes
the result's buffer (with no iteration, the copy put the initial value there). A value
the body writes in place (``y[t] = v``: the body's Function.inplace) has one buffer, the
result's, read and written by every iteration; where that is an argument's own array
(a KV cache the caller passed) no copy runs at all. A loop inside a body is a span inside
its span, its C loop inside the outer one (its call struct copied from the outer's, so
it sees the outer index). Before
(groups) and after (exec)::

    kernel 1: loop over [], stores %3        # loop0: body kernels b0, b1

    if (S_loop1a_n % 2 == 0) { <copy h0 into buf[2]> } else { <copy h0 into buf[3]> }
    {
        f0_s0_call lc0 = *c; char *L0cur[1], *L0nxt[1];
        for (int64_t it = 0; it < S_loop1a_n; it++) {
            lc0.arg__loop0_t = S_loop1a_start + it * S_loop1a_step;
            L0cur[0] = (S_loop1a_n - it) % 2 == 0 ? buf[2] : buf[3];
            L0nxt[0] = (S_loop1a_n - it) % 2 == 0 ? buf[3] : buf[2];
            const f0_s0_call *const c = &lc0;
            <kernels b0, b1>
        }
    }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from cuvil_aot.compiler.codegen.launch import Storage
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.group import Dest, Group, Kind, LoopSpace
from cuvil_aot.compiler.ir.loop import LoopBody
from cuvil_aot.compiler.ir.node import Function, Node
from cuvil_aot.compiler.ir.ops import Op

S = TypeVar("S", bound=Storage)


@dataclass
class LoopSpan:
    """Where a loop's kernels are in a signature's kernel list, and its buffers."""

    body: LoopBody
    first: int  # its first kernel: the copies of initial values, then the body's
    copies: int
    stop: int  # one past its last kernel
    inits: list[Node]  # per carried value: its initial value
    outs: list[Node]  # per carried value: the buffer of its result after the loop
    nexts: list[Node]  # per carried value: the body's output (its second buffer)
    captured: list[Node]  # per captured parameter of the body: the value it stands for


def flatten(fn: Function) -> tuple[list[Group], list[LoopSpan]]:
    """``fn``'s groups with each loop group replaced by its copies and its body's groups
    (flattened the same way: a loop inside a loop's body is a span inside its span; spans
    outer first)."""
    groups: list[Group] = []
    spans: list[LoopSpan] = []
    for group in fn.groups:
        if group.kind is not Kind.LOOP:
            groups.append(group)
            continue
        body: LoopBody = group.loop
        srcs = group.roots[0].srcs
        inits = list(srcs[:body.ncarried])
        results = {r.attrs[1]: r for r in group.roots}
        # a result nothing reads after the loop still needs its buffer
        nexts = list(body.fn.outputs)
        outs = [results.get(j, Node(Op.CAST, nxt.type, (nxt,))) for j, nxt in enumerate(nexts)]
        first = len(groups)
        inplace = in_place(body)  # one buffer, the result's: the initial value goes there
        seconds = [outs[j] if j in inplace else nxt for j, nxt in enumerate(nexts)]
        held = {j for j in inplace if _holds(fn, outs[j], inits[j])}
        for buffers in (outs, seconds):  # the initial value into where iteration 0 reads it
            for init, buffer in [(i, b) for j, (i, b) in enumerate(zip(inits, buffers))
                                 if j not in held]:
                copy = Node(Op.CAST, buffer.type, (init,), span=init.span)
                groups.append(Group(Kind.ELEMENTWISE, LoopSpace(buffer.shape), (copy,),
                                    (Dest(buffer),)))
        inner_groups, inner_spans = flatten(body.fn)
        start = len(groups)
        groups.extend(inner_groups)
        spans.append(LoopSpan(body, first, start - first, len(groups), inits, outs, nexts,
                              list(srcs[body.ncarried:])))
        spans.extend(dataclasses.replace(s, first=s.first + start, stop=s.stop + start)
                     for s in inner_spans)
    return groups, spans


def _holds(fn: Function, out: Node, init: Node) -> bool:
    """Whether ``out`` is stored in argument ``init``'s own array (a loop writes into the
    caller's array in place): it holds the initial value already."""
    return any(fn.outputs[k] is out and fn.param_nodes[p] is init for k, p in fn.inplace)


def storage_names(spans: list[LoopSpan]) -> tuple[dict[int, str], dict[int, Node]]:
    """(named, alias) of launch.Storage for the body's kernels."""
    named: dict[int, str] = {}
    alias: dict[int, Node] = {}
    for s in spans:  # outer first: what an inner body captures is resolved already
        m = s.body.number
        for j, (param, nxt) in enumerate(zip(s.body.carried, s.nexts)):
            named[id(param)] = f"L{m}cur[{j}]"
            named[id(nxt)] = f"L{m}nxt[{j}]"
        for param, value in zip(s.body.captured, s.captured):
            target = alias.get(id(value), value)
            if id(target) in named:  # an outer loop's carried value: its pointer
                named[id(param)] = named[id(target)]
            else:
                alias[id(param)] = target
    return named, alias


def index_fields(spans: list[LoopSpan]) -> list[str]:
    """The call struct's fields of the loop indices."""
    return [f"arg_{s.body.index.attrs[1]}" for s in spans]


def run_kernels(w: Writer, prefix: str, count: int, spans: list[LoopSpan], st: S,
                emit: Callable[[int, S], None],
                each_iteration: Callable[[LoopBody], None] | None = None) -> None:
    """Runs kernels 0..count-1 through ``emit(g, storage)``, each loop's inside its C loop
    (a loop inside a loop's body inside that one's); ``each_iteration`` writes what runs
    before the body's kernels in every iteration."""
    _run_range(w, prefix, 0, count, spans, [], st, emit, each_iteration)


def _run_range(w: Writer, prefix: str, g: int, stop: int, spans: list[LoopSpan],
               inside: list[LoopSpan], st: S, emit: Callable[[int, S], None],
               each_iteration: Callable[[LoopBody], None] | None) -> None:
    """Kernels g..stop-1 inside the loops ``inside`` (a loop without copies starts where
    its body does: spans are outer first, so the outer one is found first)."""
    while g < stop:
        span = next((s for s in spans if s.first == g and all(s is not i for i in inside)),
                    None)
        if span is None:
            emit(g, st)
            g += 1
            continue
        _run_loop(w, prefix, span, spans, [*inside, span], st, emit, each_iteration)
        g = span.stop


def _run_loop(w: Writer, prefix: str, span: LoopSpan, spans: list[LoopSpan],
              inside: list[LoopSpan], st: S, emit: Callable[[int, S], None],
              each_iteration: Callable[[LoopBody], None] | None) -> None:
    """One loop: its copies, then its C loop (the copies and the buffers' pointers with the
    names of the code around the loop, not the body's)."""
    own = {id(p) for p in span.body.carried} | {id(n) for n in span.nexts}
    outer = dataclasses.replace(st, named={k: v for k, v in st.named.items() if k not in own})
    r = span.body.range
    n = f"S_{r.size_symbol}"
    half = span.copies // 2  # into the result's buffer, then into the body output's
    with w.block(f"if ({n} % 2 == 0)"):  # iteration 0 reads the result's buffer
        for k in range(span.first, span.first + half):
            emit(k, outer)
    with w.block("else"):
        for k in range(span.first + half, span.first + span.copies):
            emit(k, outer)
    m = span.body.number
    w.line(f"{{  /* {span.body}: {str(r).replace('*/', '* /')} */")
    w.level += 1
    j = max(1, span.body.ncarried)
    w.line(f"{prefix}_call lc{m} = *c; char *L{m}cur[{j}], *L{m}nxt[{j}];")
    w.line(f"(void)L{m}cur; (void)L{m}nxt;")
    with w.block(f"for (int64_t it = 0; it < {n}; it++)"):
        w.line(f"lc{m}.arg_{span.body.index.attrs[1]} = S_{r.start_symbol} + it * "
               f"S_{r.step_symbol};")
        inplace = in_place(span.body)
        for c, (out, nxt) in enumerate(zip(span.outs, span.nexts)):
            a, b = f"(char *)({outer.data(out)})", f"(char *)({outer.data(nxt)})"
            if c in inplace:  # written in place: every iteration reads and writes one
                b = a
            w.line(f"L{m}cur[{c}] = ({n} - it) % 2 == 0 ? {a} : {b};")
            w.line(f"L{m}nxt[{c}] = ({n} - it) % 2 == 0 ? {b} : {a};")
        w.line(f"const {prefix}_call *const c = &lc{m}; (void)c;")
        if each_iteration is not None:
            each_iteration(span.body)
        _run_range(w, prefix, span.first + span.copies, span.stop, spans, inside, st, emit,
                   each_iteration)
    w.level -= 1
    w.line("}")


def in_place(body: LoopBody) -> set[int]:
    """The carried values the body writes in place (``y[t] = v``: Function.inplace)."""
    return {k for k, _ in body.fn.inplace}


def in_body(spans: list[LoopSpan], g: int) -> bool:
    """Whether kernel g runs inside a loop (once per iteration)."""
    return any(s.first + s.copies <= g < s.stop for s in spans)


def runs(spans: list[LoopSpan], g: int) -> str:
    """A C condition: kernel g runs at all in this call (its loops iterate)."""
    return " && ".join(f"S_{s.body.range.size_symbol} > 0" for s in spans
                       if s.first + s.copies <= g < s.stop) or "1"
