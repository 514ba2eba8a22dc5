"""What an entry point decided for loading and building; nothing below reads the
environment."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from cuvil_aot.cache import DEFAULT_MAX_BYTES, CacheError, CacheKey, default_cache_dir
from cuvil_aot.errors import warn_user
from cuvil_aot.load import gpus, toolstamp
from cuvil_aot.options import Options, parse_archs

if TYPE_CHECKING:
    from cuvil_aot.knobs import Knobs

BUILD_DIR_PREFIX = "cuvil_aot-build-"
"""builder.build_bytes names a build's private temp directory
``<BUILD_DIR_PREFIX><pid>-<random>``, so that those of killed processes can be told and
swept (artifacts.py); a name without a PID is never swept."""


class MissingExtension(ImportError):
    """strict mode: no prebuilt or cached extension matches, and nothing may be compiled."""


# NamedTuples, not dataclasses: each dataclass costs ~0.5 ms of start-up (the
# cold-start budget of docs/ARCHITECTURE.md is 50 ms for everything).
class Settings(NamedTuple):
    """What the entry point decided; nothing below reads the environment."""

    mode: str = "import"
    """strict: never compile; import and lazy: compile on a miss (lazy only defers when)."""
    cache_dir: Path | None = None
    """The store's root; None means cache.default_cache_dir()."""
    max_bytes: int = DEFAULT_MAX_BYTES
    cc: str = ""
    """CUVIL_AOT_CC: the compiler a build would use, when options.cc is empty."""
    options: Options | None = None
    """What builds are asked for beyond the knobs; None means the defaults."""
    use_prebuilt: bool = True
    """Consider extensions shipped next to the module (the CLI's build turns it off)."""
    cuda_archs: str = ""
    """CUVIL_AOT_CUDA_ARCHS, when options.cuda_archs is None."""
    cuda_home: str = ""
    """CUDA_HOME: where a build looks for nvcc."""
    signing_key: str = ""
    """CUVIL_AOT_SIGNING_KEY: signs new cache entries (cache/signing.py)."""
    verify_key: str = ""
    """CUVIL_AOT_VERIFY_KEY: one more key whose signatures are trusted."""
    require_signed: bool = False
    """CUVIL_AOT_REQUIRE_SIGNED: entries without a trusted signature are refused."""
    stop_at: str = ""
    """CUVIL_AOT_TEST_STOP_AT: tests only (stores.stopper)."""
    lock_timeout: float = 30.0
    """CUVIL_AOT_LOCK_TIMEOUT: seconds to wait for another builder of the same key (it may
    be stopped) before building in a private cache; with a remote cache, also how long to
    wait for another machine that builds the same key."""
    remote_cache: str = ""
    """CUVIL_AOT_REMOTE_CACHE: the shared tier behind the local store (remote_tier.py)."""
    remote_timeout: float = 1.5
    """CUVIL_AOT_REMOTE_CACHE_TIMEOUT: seconds one request to the remote may take."""
    remote_ttl: int = 30 * 86400
    """CUVIL_AOT_REMOTE_CACHE_TTL: seconds a Redis entry lives unread."""
    remote_endpoint: str = ""
    """CUVIL_AOT_REMOTE_CACHE_ENDPOINT: an S3 endpoint URL; default boto3's."""

    @classmethod
    def from_knobs(cls, knobs: Knobs, options: Options | None = None) -> Settings:
        return cls(knobs.mode, knobs.cache_dir, knobs.cache_max_bytes, knobs.cc, options,
                   cuda_archs=knobs.cuda_archs, cuda_home=knobs.cuda_home,
                   signing_key=knobs.signing_key, verify_key=knobs.verify_key,
                   require_signed=knobs.require_signed, stop_at=knobs.test_stop_at,
                   lock_timeout=knobs.lock_timeout, remote_cache=knobs.remote_cache,
                   remote_timeout=knobs.remote_timeout, remote_ttl=knobs.remote_ttl,
                   remote_endpoint=knobs.remote_endpoint)

    @property
    def cuda_targets(self) -> tuple[str, ...]:
        """The GPU targets of a build: Options', else CUVIL_AOT_CUDA_ARCHS, else the GPUs
        this machine has (gpus.py); () builds CPU-only."""
        archs = getattr(self.options, "cuda_archs", None)
        if archs is not None:
            return tuple(archs)
        if self.cuda_archs:
            return parse_archs(self.cuda_archs)
        return gpus.archs(self._memo_dir())

    @property
    def cuda_request(self) -> str:
        """The GPU targets asked for, as the cheap key records them: a new GPU is a miss."""
        return ",".join(self.cuda_targets) or "none"

    def _memo_dir(self) -> Path | None:
        try:
            return Path(self.cache_dir or default_cache_dir())
        except CacheError:
            return None

    @property
    def compiler_override(self) -> str:
        return (self.options.cc if self.options is not None else "") or self.cc

    @property
    def cpu_levels(self) -> tuple[int, ...]:
        return tuple(self.options.cpu_levels) if self.options is not None else ()

    @property
    def build_options(self) -> Options:
        """The options a build gets: ``options`` with the knobs' compiler, CUDA toolkit and
        GPU targets where it leaves them unset (the compiler reads no environment)."""
        options = self.options or Options()
        archs = self.cuda_targets
        if not archs and options.cuda_archs is None and not self.cuda_archs:
            _say_cpu_only(self.cuda_home)
        return replace(options, cc=options.cc or self.cc, cuda_archs=archs,
                       cuda_home=options.cuda_home or self.cuda_home)


class Outcome(NamedTuple):
    module: str
    how: str
    """nothing, loaded (already in this process), prebuilt, shortcut, cached, remote (from
    the remote cache tier) or built."""
    key: CacheKey | None = None
    seconds: float = 0.0


_said: list[bool] = []


def _say_cpu_only(cuda_home: str) -> None:
    """Once per process, where nvcc could build GPU code but no GPU asks for it."""
    if not _said and toolstamp.nvcc_stamp(cuda_home):
        _said.append(True)
        warn_user("cuvil_aot: no NVIDIA GPU here, so modules are built for the CPU only; set "
                  "CUVIL_AOT_CUDA_ARCHS (e.g. sm_90,compute_90) to add GPU code for other "
                  "machines", RuntimeWarning)
