"""What the remote cache's front (remote.py) and its backends (remote_redis.py,
remote_s3.py) share: the configuration and the errors."""

from __future__ import annotations

from typing import NamedTuple

from .errors import CacheError


class RemoteError(CacheError):
    """The remote cache cannot be used now: down, slow, full, or refusing us."""


class RemoteFull(RemoteError):
    """The remote refuses writes (out of memory or space); it may still serve reads."""


class Config(NamedTuple):
    """What the entry point decided about the remote (knobs.py, load/settings.py)."""

    url: str
    timeout: float = 1.5
    """Seconds one request may take (connect, read) before the remote counts as down."""
    ttl: int = 30 * 86400
    """Seconds an entry lives unread on a remote that expires keys (Redis)."""
    endpoint: str = ""
    """S3 only: the endpoint URL (a local S3-compatible server); else boto3's own."""
