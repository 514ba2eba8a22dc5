"""Each version's exec: the C that runs its kernels, reading sizes and numbers from the
call struct its match filled (no Python API: it runs without the GIL). Versions mostly
differ in names only, so each text is written once and the versions share it
(``exec_functions``)."""

from __future__ import annotations

import re

from cuvil_aot.compiler.codegen import host_scalars, run_time_loops
from cuvil_aot.compiler.codegen.compiled import Compiled
from cuvil_aot.compiler.codegen.gather_access import param_checks
from cuvil_aot.compiler.codegen.launch import launch
from cuvil_aot.compiler.codegen.writer import Writer
from cuvil_aot.compiler.ir.signature import NONE_DTYPE


def call_struct(w: Writer, comp: Compiled) -> None:
    """What a match learns about a call (sizes, numbers), which both paths run on."""
    with w.block("typedef struct", f"}} {comp.prefix}_call;"):
        w.line(f"int64_t sym[{max(1, len(comp.symbols))}];")
        for p in comp.sig.params:
            if p.is_scalar and p.type.dtype != NONE_DTYPE:
                w.line(f"{'double' if p.type.dtype == 'float64' else 'int64_t'} arg_{p.name};")
        for index in run_time_loops.index_fields(comp.loops):  # run-time loops' indices
            w.line(f"int64_t {index};")
        host_scalars.fields(w, comp.fn, comp.hoisted)


def exec_function(w: Writer, comp: Compiled) -> None:
    """Runs every kernel; no Python API calls, so it runs without the GIL."""
    sig = f"static int {comp.prefix}_exec(PyArrayObject **in, char **buf, " \
          f"const {comp.prefix}_call *c, int64_t *gerr)"
    with w.block(sig):
        w.line("(void)in; (void)buf; (void)c; (void)gerr;")
        for s, sym in enumerate(comp.symbols):
            w.line(f"const int64_t S_{sym} = c->sym[{s}]; (void)S_{sym};")
        param_checks(w, comp.fn, comp.storage.params, comp.hoisted)
        run_time_loops.run_kernels(  # int indices of the body checked as NumPy: each time
            w, comp.prefix, len(comp.kernels), comp.loops, comp.storage,
            lambda g, st: launch(w, comp.kernels[g], st),
            lambda body: param_checks(w, body.fn, {}, {}, host=lambda n: host_scalars.locals_of(
                w, [n])[id(n)]))
        w.line("return 0;")


def exec_functions(comps: list[Compiled], aliases: dict[str, str]
                   ) -> tuple[dict[str, str], dict[str, str]]:
    """Each version's exec, each text once: a version whose exec and call struct are an
    earlier one's but for their names and those of kernels of one text (as the versions of
    a function mostly are) runs that one. Returns the execs' texts by prefix, and prefix ->
    the prefix of the exec it runs."""
    first: dict[str, str] = {}
    runs: dict[str, str] = {}
    texts: dict[str, str] = {}
    for comp in comps:
        text, struct = Writer(), Writer()
        exec_function(text, comp)
        call_struct(struct, comp)
        runs[comp.prefix] = first.setdefault(
            _nameless_exec(comp, text.text() + struct.text(), aliases), comp.prefix)
        if runs[comp.prefix] == comp.prefix:
            texts[comp.prefix] = text.text()
    return texts, runs


def _nameless_exec(comp: Compiled, text: str, aliases: dict[str, str]) -> str:
    """``text`` with ``comp``'s kernels named as the first of their texts and its own
    call struct and exec blanked: any other name of the version keeps it apart."""
    if comp.kernels:
        names = re.compile(r"\b(" + "|".join(re.escape(k.name) for k in comp.kernels)
                           + r")(?![0-9])")
        text = names.sub(lambda m: aliases[m.group(1)], text)
    return text.replace(f"{comp.prefix}_call", "@call").replace(f"{comp.prefix}_exec", "@exec")
