"""Large allocations of the web process go back to the system when they are freed.

glibc's ``malloc`` serves a request above ``M_MMAP_THRESHOLD`` (128 KiB at start) with its own
``mmap``, unmapped on ``free``. But freeing such a block *raises* the threshold to its size, up
to 32 MiB on 64-bit systems (the "dynamic mmap threshold", ``mallopt(3)``), and from then on
blocks of that size come from the heap of the thread's arena (up to 8 arenas a core), where a
free keeps them resident. Pillow allocates a decoded image in blocks of 16 MiB: a 40 MP image
(160 MB as Pillow's 4-byte RGB) freed by one request's thread stays resident in that thread's
arena while the next request's thread decodes its own in another. Measured through the real
web server (``tests/e2e/test_predict_memory.py``), fifty 40 MP predictions with 2 inference
slots: peak +709 MB with the dynamic threshold, +348 MB with it fixed at 1 MiB (2 x 160 MB, the
slots' worth). Fixing it (any ``mallopt(M_MMAP_THRESHOLD)`` switches the dynamic adjustment
off) costs an ``mmap``/``munmap`` pair per allocation over 1 MiB, nothing below.

Only the web process does this (``sampan.asgi``): workers allocate and free large tensors all
the time, where the faults of fresh mappings would cost training time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

__all__ = ["MMAP_THRESHOLD_BYTES", "fix_mmap_threshold"]

log = logging.getLogger(__name__)

#: allocations of this many bytes or more are mapped on their own and unmapped when freed
MMAP_THRESHOLD_BYTES = 1024 * 1024
_M_MMAP_THRESHOLD = -3  # malloc.h


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Set glibc's ``M_MMAP_THRESHOLD`` to ``threshold`` bytes for this process. Returns True
    when set; False where the C library is not glibc (nothing to do: musl has no arenas of this
    kind) or when ``MALLOC_MMAP_THRESHOLD_`` in the environment already chose one (the
    operator's choice wins)."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if mallopt(_M_MMAP_THRESHOLD, threshold) != 1:
        log.warning("mallopt(M_MMAP_THRESHOLD, %d) refused", threshold)
        return False
    return True
