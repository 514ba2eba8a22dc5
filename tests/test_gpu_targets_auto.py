"""Build what this machine runs: without CUVIL_AOT_CUDA_ARCHS, a build makes CUDA code for
the GPUs the driver reports (remembered under a stamp of the driver's /proc entries),
and CPU code only where there is none, saying once how to add GPU code."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from cuvil_aot.load import gpus, settings
from cuvil_aot.load.settings import Settings
from cuvil_aot.options import Options


@pytest.fixture
def driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """A fake /proc/driver/nvidia with two boards, and a driver that counts its questions."""
    proc = tmp_path / "proc"
    (proc / "gpus" / "0000:01:00.0").mkdir(parents=True)
    (proc / "gpus" / "0000:02:00.0").mkdir()
    (proc / "version").write_text("NVRM version: 580.0\n")
    state: dict[str, object] = {"asked": 0, "answer": ("sm_80", "sm_90", "compute_90")}

    def ask() -> tuple[str, ...]:
        state["asked"] = int(state["asked"]) + 1  # type: ignore[call-overload]
        return state["answer"]  # type: ignore[return-value]

    monkeypatch.setattr(gpus, "PROC", proc)
    monkeypatch.setattr(gpus, "_ask_driver", ask)
    monkeypatch.setattr(gpus, "_known", {})
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    state["proc"] = proc
    return state


def test_the_driver_is_asked_once_then_remembered(driver: dict[str, object],
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    memo = tmp_path / "cache"
    memo.mkdir()
    assert gpus.archs(memo) == ("sm_80", "sm_90", "compute_90") and driver["asked"] == 1
    monkeypatch.setattr(gpus, "_known", {})  # a new process: the memo file answers
    assert gpus.archs(memo) == ("sm_80", "sm_90", "compute_90") and driver["asked"] == 1
    assert json.loads((memo / gpus.MEMO).read_text())["archs"] == ["sm_80", "sm_90",
                                                                   "compute_90"]


def test_a_new_board_or_driver_asks_again(driver: dict[str, object], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    gpus.archs(tmp_path)
    (Path(str(driver["proc"])) / "gpus" / "0000:03:00.0").mkdir()
    driver["answer"] = ("sm_90", "sm_100", "compute_100")
    assert gpus.archs(tmp_path) == ("sm_90", "sm_100", "compute_100") and driver["asked"] == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    gpus.archs(tmp_path)
    assert driver["asked"] == 3


def test_a_damaged_memo_is_not_believed(driver: dict[str, object], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    gpus.archs(tmp_path)
    doc = json.loads((tmp_path / gpus.MEMO).read_text())
    (tmp_path / gpus.MEMO).write_text(json.dumps({**doc, "archs": ["sm_90; rm -rf /"]}))
    monkeypatch.setattr(gpus, "_known", {})
    assert gpus.archs(tmp_path) == ("sm_80", "sm_90", "compute_90") and driver["asked"] == 2


def test_no_driver_means_no_gpu_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "PROC", tmp_path / "absent")
    monkeypatch.setattr(gpus, "_libcuda", lambda: None)
    assert gpus.archs(tmp_path) == ()


def test_settings_follow_options_then_the_knob_then_the_machine(
        driver: dict[str, object], tmp_path: Path) -> None:
    auto = Settings(cache_dir=tmp_path)
    assert auto.cuda_targets == ("sm_80", "sm_90", "compute_90")
    assert auto.cuda_request == "sm_80,sm_90,compute_90"  # a new GPU: a new cheap key
    assert auto.build_options.cuda_archs == ("sm_80", "sm_90", "compute_90")
    assert Settings(cache_dir=tmp_path, cuda_archs="none").cuda_request == "none"
    assert Settings(cache_dir=tmp_path, cuda_archs="sm_75").build_options.cuda_archs == \
        ("sm_75",)
    explicit = Settings(cache_dir=tmp_path, cuda_archs="sm_75",
                        options=Options(cuda_archs=("sm_120",)))
    assert explicit.cuda_targets == ("sm_120",)


def test_without_a_gpu_builds_are_cpu_only_and_say_so_once(
        driver: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    driver["answer"] = ()
    monkeypatch.setattr(settings, "_said", [])
    monkeypatch.setattr(settings.toolstamp, "nvcc_stamp", lambda home: "/usr/bin/nvcc:1:2")
    with pytest.warns(RuntimeWarning, match="CPU only; set CUVIL_AOT_CUDA_ARCHS"):
        assert Settings(cache_dir=tmp_path).build_options.cuda_archs == ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Settings(cache_dir=tmp_path).build_options.cuda_archs == ()
        assert Settings(cache_dir=tmp_path, cuda_archs="none").build_options.cuda_archs == ()
