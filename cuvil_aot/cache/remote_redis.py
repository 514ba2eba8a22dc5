"""The Redis backend of the remote cache, through the ``redis`` client (redis-py).

``redis://[user:password@]host:port/db`` (``rediss://`` for TLS). Every name lives under
``cuvil_aot:``. Entries expire after ``Config.ttl`` seconds unread: each read refreshes
the TTL (GETEX), so the fleet's working set stays and the rest ages out; a server with
``maxmemory-policy allkeys-lru`` evicts by use instead. A lease is ``SET NX PX``: it
expires by itself when its holder dies. Counters (hits, misses, puts) are one hash.

The client never retries: a request that fails or takes longer than ``Config.timeout``
raises RemoteError at once, and the caller stops asking this remote.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from .remote_types import Config, RemoteError, RemoteFull

PREFIX = "cuvil_aot:"
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisRemote:
    def __init__(self, config: Config) -> None:
        parts = urlsplit(config.url)
        self.where = f"{parts.scheme}://{parts.hostname}:{parts.port or 6379}{parts.path}"
        self._ttl = max(int(config.ttl), 1)
        self._client = redis.Redis.from_url(
            config.url, socket_timeout=config.timeout, socket_connect_timeout=config.timeout,
            retry=Retry(NoBackoff(), 0), retry_on_timeout=False, health_check_interval=0)
        self._release = self._client.register_script(_RELEASE)

    def _fail(self, exc: Exception, doing: str) -> RemoteError:
        text = str(exc)
        if isinstance(exc, redis.exceptions.OutOfMemoryError) or "maxmemory" in text:
            return RemoteFull(f"the remote cache {self.where} is full ({text[:100]})")
        why = "timed out" if isinstance(exc, (TimeoutError, redis.TimeoutError)) else text[:160]
        return RemoteError(f"the remote cache {self.where} failed to {doing}: {why}")

    def get(self, name: str) -> bytes | None:
        try:
            data = self._client.getex(PREFIX + name, ex=self._ttl)
        except (redis.RedisError, OSError) as exc:
            raise self._fail(exc, "read") from None
        return data.encode() if isinstance(data, str) else data

    def put(self, name: str, data: bytes) -> None:
        try:
            self._client.set(PREFIX + name, data, ex=self._ttl)
        except (redis.RedisError, OSError) as exc:
            raise self._fail(exc, "store") from None

    def lease(self, name: str, token: str, ttl_s: float) -> bool:
        try:
            got = self._client.set(PREFIX + name, token, nx=True, px=max(int(ttl_s * 1000), 1))
        except (redis.RedisError, OSError) as exc:
            raise self._fail(exc, "lease") from None
        return bool(got)

    def release(self, name: str, token: str) -> None:
        try:
            self._release(keys=[PREFIX + name], args=[token])
        except (redis.RedisError, OSError) as exc:
            raise self._fail(exc, "release a lease") from None

    def count(self, field: str, by: int = 1) -> None:
        try:
            self._client.hincrby(PREFIX + "stats", field, by)
        except (redis.RedisError, OSError) as exc:
            raise self._fail(exc, "count") from None

    def names(self) -> list[str]:
        start = len(PREFIX + "entry/")
        try:
            return sorted(_text(k)[start:] for k in
                          self._client.scan_iter(match=PREFIX + "entry/*", count=500))
        except (redis.RedisError, OSError) as exc:
            raise self._fail(exc, "list") from None

    def usage(self) -> dict[str, int]:
        digests = self.names()
        try:
            pipe = self._client.pipeline(transaction=False)
            for digest in digests:
                pipe.strlen(PREFIX + "entry/" + digest)
            sizes = pipe.execute()
            counters = self._client.hgetall(PREFIX + "stats")
        except (redis.RedisError, OSError) as exc:
            raise self._fail(exc, "report its size") from None
        found = {_text(k): int(v) for k, v in counters.items()}
        return {"hits": 0, "misses": 0, **found, "entries": len(digests),
                "bytes": sum(int(s) for s in sizes)}
