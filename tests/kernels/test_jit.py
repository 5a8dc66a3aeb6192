"""numba tells a cached kernel is stale from its own file only; fasttie drops its cached kernels
when any kernel source changed (fasttie._kernels._jit._drop_stale_cache): a kernel compiled with
an older callee (finalize_ties inside score_ties' kernels) must never be loaded."""

import os

from fasttie._kernels import _jit


def _files(folder):
    return sorted(os.listdir(folder))


def test_stale_or_missing_stamp_drops_only_fasttie_kernels(tmp_path):
    kernels = ["finalize.finalize_ties-250.py311.nbi", "finalize.finalize_ties-250.py311.1.nbc",
               "score_ties.finalize_rankings-300.py311.nbi"]
    others = ["other_package.f-1.py311.nbi", "notes.txt"]
    for name in kernels + others:
        (tmp_path / name).write_text("x")
    assert _jit._drop_stale_cache(str(tmp_path), "a" * 64)  # no stamp yet: stale
    assert _files(tmp_path) == sorted(others + [_jit._STAMP])
    (tmp_path / kernels[0]).write_text("x")  # compiled under the recorded sources: kept
    assert not _jit._drop_stale_cache(str(tmp_path), "a" * 64)
    assert kernels[0] in _files(tmp_path)
    assert _jit._drop_stale_cache(str(tmp_path), "b" * 64)  # a kernel source changed
    assert kernels[0] not in _files(tmp_path)
    assert (tmp_path / _jit._STAMP).read_text().strip() == "b" * 64


def test_stamp_follows_every_kernel_source(tmp_path):
    stamp = _jit.sources_stamp()
    assert stamp == _jit.sources_stamp() and len(stamp) == 64
    source = os.path.join(os.path.dirname(_jit.__file__), "tie_math.py")
    before = os.stat(source)
    try:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        assert _jit.sources_stamp() != stamp  # a callee's file moved: every cached kernel may be stale
    finally:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _jit.sources_stamp() == stamp


def test_unwritable_cache_is_left_alone(tmp_path):
    missing = tmp_path / "absent"
    assert _jit._drop_stale_cache(str(missing), "c" * 64)  # nothing to read or write: no error
    assert not missing.exists()
