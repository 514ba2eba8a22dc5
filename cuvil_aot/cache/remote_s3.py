"""The S3 backend of the remote cache, through ``boto3``.

``s3://bucket/prefix``: region and credentials as boto3 finds them (environment,
``~/.aws``, an instance role); the endpoint is ``Config.endpoint``
(CUVIL_AOT_REMOTE_CACHE_ENDPOINT), else boto3's (AWS_ENDPOINT_URL, or AWS itself).

S3 does not expire objects on read: give the bucket a lifecycle rule that expires
``<prefix>/entry/`` after some days (SECURITY.md, README); an expired entry is rebuilt
and pushed again by the first machine that misses it. A lease is a conditional create
(``PutObject`` with ``If-None-Match: *``: one writer wins, the rest get 412); a lease
older than its TTL (its holder died) is deleted and taken over. S3 keeps no counters:
``usage`` lists entries and bytes only.

The client never retries, and connect and read time out after ``Config.timeout``.
"""

from __future__ import annotations

import datetime
from urllib.parse import urlsplit

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import BotoCoreError, ClientError

from .remote_types import Config, RemoteError

_ABSENT = {"NoSuchKey", "404", "NotFound"}
_TAKEN = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class S3Remote:
    def __init__(self, config: Config) -> None:
        parts = urlsplit(config.url)
        self._bucket = parts.netloc
        path = parts.path.strip("/")
        self._prefix = f"{path}/" if path else ""
        self.where = f"s3://{self._bucket}/{self._prefix}"
        boto = BotoConfig(connect_timeout=config.timeout, read_timeout=config.timeout,
                          retries={"total_max_attempts": 1, "mode": "standard"})
        self._client = boto3.session.Session().client(
            "s3", endpoint_url=config.endpoint or None, config=boto)

    def _fail(self, exc: Exception, doing: str) -> RemoteError:
        if isinstance(exc, ClientError):
            why = f"{_code(exc)} {exc.response.get('Error', {}).get('Message', '')}"
        else:
            why = str(exc)
        return RemoteError(f"the remote cache {self.where} failed to {doing}: {why[:160]}")

    def get(self, name: str) -> bytes | None:
        try:
            reply = self._client.get_object(Bucket=self._bucket, Key=self._prefix + name)
            return bytes(reply["Body"].read())
        except ClientError as exc:
            if _code(exc) in _ABSENT:
                return None
            raise self._fail(exc, "read") from None
        except (BotoCoreError, OSError) as exc:
            raise self._fail(exc, "read") from None

    def put(self, name: str, data: bytes) -> None:
        try:
            self._client.put_object(Bucket=self._bucket, Key=self._prefix + name, Body=data)
        except (ClientError, BotoCoreError, OSError) as exc:
            raise self._fail(exc, "store") from None

    def lease(self, name: str, token: str, ttl_s: float) -> bool:
        key = self._prefix + name
        try:
            for _ in range(2):
                try:
                    self._client.put_object(Bucket=self._bucket, Key=key, Body=token.encode(),
                                            IfNoneMatch="*")
                    return True
                except ClientError as exc:
                    if _code(exc) not in _TAKEN:
                        raise
                if not self._stale(key, ttl_s):
                    return False
                self._client.delete_object(Bucket=self._bucket, Key=key)  # its holder died
            return False
        except (ClientError, BotoCoreError, OSError) as exc:
            raise self._fail(exc, "lease") from None

    def _stale(self, key: str, ttl_s: float) -> bool:
        try:
            head = self._client.head_object(Bucket=self._bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _ABSENT:
                return True  # released meanwhile: try again
            raise
        age = datetime.datetime.now(datetime.timezone.utc) - head["LastModified"]
        return bool(age.total_seconds() > ttl_s)

    def release(self, name: str, token: str) -> None:
        if self.get(name) == token.encode():
            try:
                self._client.delete_object(Bucket=self._bucket, Key=self._prefix + name)
            except (ClientError, BotoCoreError, OSError) as exc:
                raise self._fail(exc, "release a lease") from None

    def count(self, field: str, by: int = 1) -> None:
        """S3 has no atomic counter: nothing is counted."""

    def _listing(self) -> list[tuple[str, int]]:
        start = self._prefix + "entry/"
        found = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self._bucket, Prefix=start)
            for page in pages:
                found += [(o["Key"][len(start):], int(o["Size"])) for o in page.get("Contents", [])]
        except (ClientError, BotoCoreError, OSError) as exc:
            raise self._fail(exc, "list") from None
        return sorted(found)

    def names(self) -> list[str]:
        return [name for name, _ in self._listing()]

    def usage(self) -> dict[str, int]:
        listing = self._listing()
        return {"entries": len(listing), "bytes": sum(size for _, size in listing)}
