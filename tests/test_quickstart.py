"""The README's quick start, as a newcomer copies it: a fresh clone, a fresh virtual
environment, `pip install . && python examples/demo.py`. (The second command, the test
suite, is what .ci/run itself runs on a fresh clone.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The shell commands of the README's quick start block, comments dropped."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"## Quick start.*?```sh\n(.*?)```", text, re.S)
    assert block, "the README has no quick start block"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_names_two_commands() -> None:
    install_demo, tests = readme_commands()
    assert install_demo == "pip install . && python examples/demo.py"
    assert tests.startswith('pip install ".[test]"') and tests.endswith("pytest")


@pytest.mark.slow
def test_quick_start_runs_in_a_fresh_clone_and_venv(tmp_path: Path) -> None:
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout")
    clone = tmp_path / "fresh"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    venv_bin = tmp_path / "venv" / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUVIL_AOT_", "PYTHON"))}
    env.update(PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}", HOME=str(tmp_path),
               VIRTUAL_ENV=str(tmp_path / "venv"))
    command = readme_commands()[0]
    proc = subprocess.run(command, shell=True, cwd=clone, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "MISMATCH" not in proc.stdout and "compiled in" in proc.stdout
    again = subprocess.run([str(venv_bin / "python"), "examples/demo.py"], cwd=clone, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "loaded from the cache" in again.stdout, again.stdout
