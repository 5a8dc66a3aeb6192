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


def test_stamp_follows_the_contents_of_every_kernel_source_not_their_times(tmp_path):
    import shutil

    folder = os.path.dirname(_jit.__file__)
    stamp = _jit.sources_stamp()
    assert stamp == _jit.sources_stamp() == _jit.sources_stamp(folder) and len(stamp) == 64
    copy = tmp_path / "kernels"
    shutil.copytree(folder, copy, copy_function=shutil.copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert _jit.sources_stamp(str(copy)) == stamp  # another path, new modification times: the same sources
    with open(copy / "tie_math.py", "a") as f:
        f.write("\n")
    assert _jit.sources_stamp(str(copy)) != stamp  # a callee's file edited: every cached kernel may be stale


def test_kernels_in_numba_cache_dir_go_to_a_folder_named_after_their_sources():
    """The same folder for every copy of the package (numba's default names it after the path)."""
    from fasttie._kernels import tie_math

    kernel = next(obj for obj in vars(tie_math).values() if hasattr(obj, "_cache"))
    expected = os.path.join(os.environ["NUMBA_CACHE_DIR"], f"fasttie-kernels-{_jit.sources_stamp()[:16]}")
    assert kernel._cache.cache_path == expected


def test_unwritable_cache_is_left_alone(tmp_path):
    missing = tmp_path / "absent"
    assert _jit._drop_stale_cache(str(missing), "c" * 64)  # nothing to read or write: no error
    assert not missing.exists()
