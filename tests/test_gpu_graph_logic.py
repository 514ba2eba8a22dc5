"""The graph path's choices (native/src/gpu_graph.c) without a GPU: the runtime runs against
a fake libcuda.so.1 (tests/data/fake_libcuda.c) that logs every kernel that runs, launched
or as a graph's node, with its grid, stream and argument bytes. Whatever the path (first
sight, build, replay, twin, node updates, eviction, a capturing stream, a refused build,
the knob off), each call must run exactly its own launches, in order, with its own bytes.

In a child process: the driver is loaded once per process, and the fake must be the
libcuda.so.1 it finds (LD_LIBRARY_PATH)."""

from __future__ import annotations

import shutil

import fake_driver
import pytest

CHILD = r'''
import ctypes, random
from cuvil_aot.runtime import native

from fake_driver import Record

fake = ctypes.CDLL("libcuda.so.1")  # the runtime's own handle: the same file
buf = (Record * 4096)()

def flag(name):
    return ctypes.c_int.in_dll(fake, name)

def stats():
    return dict(native.info()["cuda_graph_stats"])

def run(launches, stream=0, site=0):
    """One call's launches; returns whether they ran as a graph."""
    native._launch_list(launches, stream, site)
    n = fake.fake_take(buf, 4096)
    got = [(r.kernel, r.grid_x, r.grid_y, r.block, r.stream, bytes(r.args)) for r in buf[:n]]
    want = [(k, gx, gy, b, stream, a) for k, gx, gy, b, a, *_ in launches]
    assert got == want, (got, want)
    graphed = {r.via_graph for r in buf[:n]}
    assert len(graphed) == 1
    return graphed.pop() == 1

rng = random.Random(0)
def args():
    return bytes(rng.randrange(256) for _ in range(32))

def waits():
    """What each node of the graph built last waits for."""
    out = (ctypes.c_int * 64)()
    got = []
    while (n := fake.fake_deps(len(got), out)) >= 0:
        got.append(list(out[:n]))
    return got

native.configure(cuda_graph=4)
A = [(k, 10 + k, 1, 256, args()) for k in range(5)]
assert not run(A)                       # first sight: recorded, launched one by one
s = stats(); assert (s["plain"], s["builds"]) == (1, 0)
assert run(A)                           # second sight: built and replayed
assert waits() == [[], [0], [1], [2], [3]]  # launches that say nothing: a chain
assert run(A) and stats()["node_updates"] == 0
B = [(k, gx, gy, b, args() if k in (1, 3) else a) for k, gx, gy, b, a in A]
assert run(B) and stats()["builds"] == 1    # other arrays seen once: the graph updated
assert stats()["node_updates"] == 2
for _ in range(2):                          # seen again: a twin of their own
    assert run(A) and run(B)
assert stats()["builds"] == 2
updates = stats()["node_updates"]
for _ in range(3):
    assert run(A) and run(B)
assert stats()["node_updates"] == updates  # ping-pong: no updates
C = [(k, gx, gy, b, args() if k == 4 else a) for k, gx, gy, b, a in A]
assert run(C) and stats()["node_updates"] == updates + 1  # the nearer twin, one node updated
assert run(A) and stats()["node_updates"] == updates + 2

# Layers of a model in a loop, each with its own weights (a third of the nodes): a twin
# each once seen twice, then a cycle of replays with no update.
L = [[(k, gx, gy, b, args() if k % 3 == 0 else a) for k, gx, gy, b, a in A] for _ in range(6)]
for _ in range(2):
    for layer in L:
        run(layer)
builds, updates = stats()["builds"], stats()["node_updates"]
assert builds <= 2 + 6, builds  # a twin a layer at most (the first took a seen-once one)
for _ in range(4):
    for layer in L:
        assert run(layer)
assert (stats()["builds"], stats()["node_updates"]) == (builds, updates)
D = [(k, gx + 1 if k == 2 else gx, gy, b, a) for k, gx, gy, b, a in A]
assert not run(D) and run(D)            # another grid: another structure
assert not run(A, stream=7) and run(A, stream=7)  # another stream: its own graphs
assert not run(A[:3]) and not run(A[:3])  # too few launches

flag("fake_capturing").value = 1        # the caller's stream is being captured
before = stats()
assert not run(A) and not run(A[:4] + [A[0]])
assert stats()["capturing"] - before["capturing"] == 2
assert stats()["builds"] == before["builds"]
flag("fake_capturing").value = 0

flag("fake_fail_instantiate").value = 1  # the driver refuses a new structure's graph
E = [(7, 3, 2, 128, args()) for _ in range(6)]
assert not run(E) and not run(E)
tries = flag("fake_instantiates").value
flag("fake_fail_instantiate").value = 0
assert not run(E) and flag("fake_instantiates").value == tries  # not tried again

S = [(k, 4, 1, 256, args()) for k in range(6)]  # shapes called once evict no graph
assert not run(S, site=3) and run(S, site=3)
builds = stats()["builds"]
for t in range(12):
    assert not run([(k, 50 + t, 1, 256, args()) for k in range(6)], site=3)
assert run(S, site=3) and stats()["builds"] == builds

native.configure(cuda_graph=0)          # the knob off
before = stats()
assert not run(A) and stats()["plain"] - before["plain"] == 1
native.configure(cuda_graph=4)

# Random calls over a few structures, arrays, streams and two call sites, more structures
# than a site keeps (evictions): each call still runs exactly its own launches.
def fuzz(nshapes, streams, sites, calls):
    shapes = [[(rng.randrange(8), rng.randrange(1, 99), rng.randrange(1, 3), 256)
               for _ in range(rng.randrange(4, 12))] for _ in range(nshapes)]
    pools = [[[args() for _ in shape] for _ in range(3)] for shape in shapes]
    before = stats()
    for _ in range(calls):
        i, j = rng.randrange(nshapes), rng.randrange(3)
        bytes_ = [a if rng.random() < 0.9 else args() for a in pools[i][j]]
        run([(*step, a) for step, a in zip(shapes[i], bytes_)], stream=rng.choice(streams),
            site=rng.choice(sites))
    after = stats()
    assert sum(after[k] - before[k] for k in ("replays", "plain", "capturing")) == calls
    return {k: after[k] - before[k] for k in after}

churn = fuzz(12, [0, 5], [0, 1], 3000)
assert churn["replays"] > 300, churn
assert flag("fake_execs").value <= 4 * 40, flag("fake_execs").value  # sites x SLOTS at most
steady = fuzz(3, [9], [2], 1000)  # three shapes, three sets of arrays each: nearly all replayed
assert steady["replays"] > 950 and steady["builds"] <= 3 * 3, steady  # a twin a set
after = (churn, steady)
assert flag("fake_mode").value == 0  # the thread's capture mode given back after each build
assert flag("fake_relaxed_builds").value == flag("fake_instantiates").value
# Launches that name their nodes (gpu_deps.py): Q (a copy, its GEMM, the GEMM's sum), K
# and V share only inputs; attention waits for the three, the next kernel for all before.
G = [(k, 7, 1, 128, args(), node, after) for k, node, after in
     [(0, 1, 0), (1, 1, 0), (2, 1, 0), (1, 2, 0), (1, 3, 0), (3, 4, 0b111), (4, 5, 0b1111)]]
assert not run(G, site=2) and run(G, site=2)
assert waits() == [[], [0], [1], [], [], [2, 3, 4], [2, 3, 4, 5]], waits()
H = [(k, 9, 1, 128, args(), node, after) for k, node, after in
     [(0, 1, 0), (1, 2, 0), (2, 0, 0), (3, 3, 0), (4, 4, 0b100)]]
assert not run(H, site=2) and run(H, site=2)  # node 0: after every launch not waited for
assert waits() == [[], [], [0, 1], [2], [2, 3]], waits()
assert flag("fake_wrong_context").value == 0  # one device: its context current throughout
print("ok", after)
'''


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_graph_choices_run_each_calls_own_launches(tmp_path):
    proc = fake_driver.run_child(tmp_path, CHILD, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.startswith("ok"), proc.stdout
