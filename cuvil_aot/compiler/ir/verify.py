"""IR verifier: structural invariants every pass must keep."""

from __future__ import annotations

from cuvil_aot.compiler.ir.node import Function, toposort
from cuvil_aot.compiler.ir.ops import ELEMENTWISE, REDUCE, Op
from cuvil_aot.errors import InternalCompilerError


def verify(fn: Function, after: str = "") -> None:
    where = f" after pass {after!r}" if after else ""
    for node in toposort(fn.outputs):
        if node.op in ELEMENTWISE:
            for src in node.srcs:
                if src.shape != node.shape:
                    raise InternalCompilerError(
                        f"{fn.name}{where}: {node.op.name} operand shape {src.type} differs from "
                        f"result {node.type} (broadcasts must be explicit)")
                if node.op not in (Op.CAST, Op.WHERE) and src.dtype != node.srcs[0].dtype:
                    raise InternalCompilerError(
                        f"{fn.name}{where}: {node.op.name} mixes dtypes {src.dtype} and "
                        f"{node.srcs[0].dtype} (casts must be explicit)")
        if node.op in REDUCE and len(node.shape) + len(node.attrs[0]) != len(node.srcs[0].shape):
            raise InternalCompilerError(f"{fn.name}{where}: reduction rank mismatch")
    for group in fn.groups:
        if len(group.roots) != len(group.dests):
            raise InternalCompilerError(f"{fn.name}{where}: a group root has no destination")
