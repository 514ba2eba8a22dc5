"""``python -m cuvil_aot cache info|list|clear|prune|verify|explain|push|pull``.

Each acts on the cache itself: one that is refused (unsafe, unusable) is an error,
exit 1, nothing touched; never the private fallback the import path would use. ``push``
and ``pull`` move entries between it and the remote tier (CUVIL_AOT_REMOTE_CACHE,
load/remote_tier.py), for a wheel build farm that fills the remote ahead of time.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuvil_aot.cache import CacheError, Entry, Store
from cuvil_aot.cache.store import EVICT_GRACE_S
from cuvil_aot.errors import BuildError, CompileError
from cuvil_aot.load import builder, shortcuts, stores

if TYPE_CHECKING:
    from cuvil_aot.load.remote_tier import Tier

EPILOG = """
    examples:
      python -m cuvil_aot cache info
      python -m cuvil_aot cache list
      python -m cuvil_aot cache prune --max-bytes 500M   evict least recently used first
      python -m cuvil_aot cache verify                    re-hash every entry
      python -m cuvil_aot cache explain mypkg.layers      why the last build missed
      CUVIL_AOT_CACHE_DIR=/tmp/c python -m cuvil_aot cache clear
      python -m cuvil_aot cache push --all                store every local entry remotely
      python -m cuvil_aot cache pull mypkg.layers         fetch a module's entry
"""

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """'500M', '2G', '1048576' -> bytes."""
    raw = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = raw[-1:] if raw[-1:] in _UNITS else ""
    try:
        value = float(raw[: len(raw) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    return int(value * _UNITS[unit])


def human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _ago(seconds: float) -> str:
    for unit, span in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= span:
            return f"{seconds / span:.0f} {unit} ago"
    return f"{max(seconds, 0):.0f} s ago"


def _store() -> Store:
    from cuvil_aot.cli.commands import settings

    try:
        return stores.open_shared(settings())
    except CacheError as exc:
        raise CacheError(f"the cache was refused, nothing was done: {exc}") from None


def cmd_info(args: argparse.Namespace) -> int:
    store = _store()
    entries = store.entries()
    print(f"cache directory: {store.root}")
    print(f"entries:         {len(entries)}")
    print(f"size:            {human(store.size())} (cap {human(store.max_bytes)})")
    print(f"quarantined:     {_count(store.root / 'quarantine')} bad entries set aside")
    print(f"shortcuts:       {_count(store.root / shortcuts.DIRNAME)} modules")
    from cuvil_aot.cli.commands import settings

    return _remote_info(store) if settings().remote_cache else 0


def _remote_info(store: Store) -> int:
    tier = _tier(store)
    usage = tier.remote.usage()
    hits, misses = usage.get("hits", 0), usage.get("misses", 0)
    print(f"remote:          {tier.remote.where}")
    print(f"  entries:       {usage['entries']}, {human(usage['bytes'])}")
    if "hits" in usage or "misses" in usage:
        rate = f" ({100 * hits / (hits + misses):.0f}% hits)" if hits + misses else ""
        print(f"  lookups:       {hits} hits, {misses} misses{rate}, {usage.get('bad', 0)} "
              f"bad entries refused, {usage.get('pushes', 0)} pushes")
    else:
        print("  lookups:       not counted by this backend")
    return 0


def _tier(store: Store) -> Tier:
    """The remote tier as the import path would open it; CacheError if there is none."""
    from cuvil_aot.cli.commands import settings
    from cuvil_aot.load import remote_tier

    config = settings()
    if not config.remote_cache:
        raise CacheError("no remote cache: set CUVIL_AOT_REMOTE_CACHE")
    tier = remote_tier.open_tier(config, store.rules)
    if tier is None:
        raise CacheError("the remote cache is off (see the warning above)")
    return tier


def _check(tier: Tier) -> None:
    if tier.down:
        raise CacheError(f"the remote cache {tier.remote.where} failed (see the warning above)")


def cmd_push(args: argparse.Namespace) -> int:
    store = _store()
    tier = _tier(store)
    if tier.rules.signer is None:
        raise CacheError("pushing needs CUVIL_AOT_SIGNING_KEY: the remote only takes signed "
                         "entries")
    entries = store.entries()
    if not args.all:
        entries = [e for e in entries if any(e.path.name.startswith(k) for k in args.keys)]
        if not entries:
            raise CacheError(f"no local entry matches {' '.join(args.keys)}")
    pushed = 0
    for entry in entries:
        ok = tier.push(entry)
        _check(tier)
        pushed += ok
        print(f"{'pushed ' if ok else 'skipped'} {entry.path.name[:16]}  {entry.manifest.module}"
              + ("" if ok else "  (not signed by this key, or changed: cache verify)"))
    print(f"{tier.remote.where}: {pushed} of {len(entries)} entries pushed")
    return 0 if pushed == len(entries) else 1


def cmd_pull(args: argparse.Namespace) -> int:
    store = _store()
    tier = _tier(store)
    target = args.target.lower()
    if len(target) >= 8 and all(c in "0123456789abcdef" for c in target):
        matches = [d for d in tier.remote.names() if d.startswith(target)]
        if len(matches) != 1:
            raise CacheError(f"{len(matches)} remote entries match {target!r}")
        entry = tier.pull_digest(store, matches[0])
    else:
        entry = _pull_module(args.target, store, tier)
    _check(tier)
    if entry is None:
        print(f"{args.target}: not in the remote cache {tier.remote.where}, or unusable")
        return 1
    print(f"pulled {entry.path.name[:16]}  {entry.manifest.module}  {human(entry.size)}")
    return 0


def _pull_module(name: str, store: Store, tier: Tier) -> Entry | None:
    from cuvil_aot.cli.commands import load_targets, settings

    modules = load_targets([name], sys.stderr)
    if not modules or len(modules) != 1:
        raise CacheError(f"{name!r} is not one module")
    try:
        key = builder.full_key(modules[0], settings())
    except (CompileError, BuildError) as exc:
        raise CacheError(f"{name}: {exc}") from None
    return store.lookup(key) or tier.pull(store, key)


def _count(folder: Path) -> int:
    try:
        return len(os.listdir(folder))
    except FileNotFoundError:
        return 0


def cmd_list(args: argparse.Namespace) -> int:
    store = _store()
    now = time.time()
    rows = []
    for entry in store.entries():
        try:
            used = os.stat(entry.path / "manifest.json").st_mtime
        except FileNotFoundError:
            continue
        rows.append((entry.path.name[:16], entry.manifest.module, human(entry.size),
                     _ago(now - used), _ago(now - entry.manifest.created)))
    if not rows:
        print(f"{store.root}: no entries")
        return 0
    header = ("KEY", "MODULE", "SIZE", "LAST USED", "BUILT")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    store = _store()
    before = store.size()
    removed = store.clear()
    records = shortcuts.clear(store.root)
    print(f"{store.root}: removed {removed} entries ({human(before - store.size())}), the "
          f"quarantine, the build history (index) and {records} shortcut files")
    left = len(store.entries())
    if left:
        print(f"  {left} entries being published by another process were left alone")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    store = _store()
    cap = store.max_bytes if args.max_bytes is None else args.max_bytes
    removed = store.evict(args.max_bytes)
    print(f"{store.root}: removed {len(removed)} entries; size now {human(store.size())} "
          f"(cap {human(cap)})")
    if store.size() > cap:
        count, size = store.in_grace()
        print(f"  still over the cap: {count} entries ({human(size)}) were used in the last "
              f"{EVICT_GRACE_S:.0f} s and are kept, since a process may be loading them; "
              "prune again later to remove them")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    store = _store()
    problems = [*store.verify_all(), *shortcuts.problems(store.root, store.rules)]
    for path, reason in problems:
        print(f"BAD {path}: {reason}")
    print(f"{store.root}: {len(store.entries())} entries, {len(problems)} problems")
    return 1 if problems else 0


def cmd_explain(args: argparse.Namespace) -> int:
    from cuvil_aot.cli.commands import load_targets, settings

    modules = load_targets([args.module], sys.stderr)
    if modules is None:
        return 1
    status = 0
    for module in modules:
        config = settings()
        store = _store()
        try:
            key = builder.full_key(module, config)
        except (CompileError, BuildError) as exc:
            print(f"error: {module.__name__}: {exc}", file=sys.stderr)
            status = 1
            continue
        if store.lookup(key) is not None:
            print(f"{module.__name__}: key {key.digest[:16]}… is in the cache: the next "
                  "import loads it, nothing to explain")
            continue
        print(f"{module.__name__}: key {key.digest[:16]}… is NOT in the cache (a miss)")
        print(textwrap.indent(store.explain(module.__name__, key), "  "))
    return status


def _wrap(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except CacheError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1

    return run


def add_parser(sub: Any, make: Callable[..., argparse.ArgumentParser]) -> None:
    cache = make("cache", sub, "inspect and maintain the compile cache")
    cache.epilog = textwrap.dedent(EPILOG)
    actions = cache.add_subparsers(dest="action", required=True, metavar="ACTION")
    simple = {
        "info": (cmd_info, "where the cache is, its size and entry count"),
        "list": (cmd_list, "every entry: key, module, size, last use"),
        "clear": (cmd_clear, "remove every entry"),
        "verify": (cmd_verify, "re-hash every entry; exit 1 if any is bad"),
    }
    for name, (command, help) in simple.items():
        parser = actions.add_parser(name, help=help, description=help)
        parser.set_defaults(run=_wrap(command))
    prune = actions.add_parser("prune", help="evict least recently used entries to the cap",
                               description="evict least recently used entries to the cap")
    prune.add_argument("--max-bytes", type=parse_size, default=None, metavar="SIZE",
                       help="the cap to prune to (default CUVIL_AOT_CACHE_MAX_BYTES), e.g. 500M")
    prune.set_defaults(run=_wrap(cmd_prune))
    explain = actions.add_parser(
        "explain", help="which key component changed since the module's last build",
        description="which key component changed since the module's newest recorded build, "
                    "old value against new")
    explain.add_argument("module", metavar="MODULE", help="a module name or a .py path")
    explain.set_defaults(run=_wrap(cmd_explain))
    push = actions.add_parser("push", help="store local entries in the remote cache",
                              description="store local entries (signed) in the remote cache "
                                          "(CUVIL_AOT_REMOTE_CACHE)")
    which = push.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every local entry")
    which.add_argument("keys", nargs="*", default=[], metavar="KEY",
                       help="entries by key (a prefix of 8 or more hex digits)")
    push.set_defaults(run=_wrap(cmd_push))
    pull = actions.add_parser("pull", help="fetch an entry from the remote cache",
                              description="fetch (and verify) a module's entry, or a key's, "
                                          "from the remote cache into the local one")
    pull.add_argument("target", metavar="MODULE_OR_KEY",
                      help="a module name or .py path, or a key (8 or more hex digits)")
    pull.set_defaults(run=_wrap(cmd_pull))
