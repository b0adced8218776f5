"""The web process's fixed mmap threshold (sampan.core.memory)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sampan.core.memory import fix_mmap_threshold

PROBE = """
import ctypes, sys
from sampan.core.memory import fix_mmap_threshold
print(fix_mmap_threshold())
"""


def test_the_operators_choice_in_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "4194304")
    assert fix_mmap_threshold() is False


def test_set_on_glibc_in_a_fresh_process() -> None:
    """A process of its own: mallopt changes the process it runs in for good."""
    import platform

    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin",
                                          "PYTHONPATH": ":".join(sys.path)})
    expected = platform.libc_ver()[0] == "glibc"
    assert out.stdout.strip() == str(expected)
