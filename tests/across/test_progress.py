"""evaluate(progress=...): a tqdm bar on stderr, blocks sized from the work per query, results
bitwise identical with and without it (for any block size and thread count)."""

import io
import math
import sys

import numpy as np
import pytest

import fasttie as ft
from fasttie.hamming import engine as hamming_engine


def _data(kind, seed=0, n_q=37, n_db=300, n_bits=24):
    rng = np.random.default_rng(seed)
    queries, database = rng.integers(0, 2, (n_q, n_bits)), rng.integers(0, 2, (n_db, n_bits))
    if kind == "class":
        return queries, database, {"query_labels": rng.integers(0, 4, n_q), "db_labels": rng.integers(0, 4, n_db)}
    if kind == "multihot":
        return queries, database, {"query_labels": rng.integers(0, 2, (n_q, 5)), "db_labels": rng.integers(0, 2, (n_db, 5))}
    lists = [np.sort(rng.choice(n_db, rng.integers(0, 20), replace=False)) for _ in range(n_q)]
    indptr = np.concatenate([[0], np.cumsum([len(x) for x in lists])])
    indices = np.concatenate(lists)
    return queries, database, {"relevance": (indptr, indices, rng.integers(1, 4, len(indices)))}


def _same(a, b):
    assert a.to_dict() == b.to_dict()
    for name, values in a.per_query.items():
        np.testing.assert_array_equal(b.per_query[name], values, strict=True)
    for name, values in a.curves.items():
        np.testing.assert_array_equal(b.curves[name], values, strict=True)


@pytest.mark.parametrize("kind", ["class", "multihot", "listed"])
@pytest.mark.parametrize("ties", ["average", "stable"])
def test_bitwise_identical_with_progress(monkeypatch, capsys, kind, ties):
    queries, database, relevance = _data(kind)
    options = {"metrics": ["AP", "AP@10", "nDCG@20", "P@5", "RR", "P(radius=3)"], "ties": ties, "empty": "skip", "curves": True}
    plain = ft.evaluate(queries, database, **relevance, **options)
    # a tiny block: 2 x threads queries per block, many blocks and bar updates
    monkeypatch.setattr(hamming_engine, "_BLOCK_SECONDS", 1e-12)
    for n_threads in (1, 2):
        with_bar = ft.evaluate(queries, database, **relevance, **options, n_threads=n_threads, progress=True)
        _same(plain, with_bar)
    assert "37/37" in capsys.readouterr().err


def test_blocks_follow_the_work_per_query(monkeypatch):
    calls, chunks = [], []
    original = hamming_engine.finalize_histograms

    def counting(hist, *args):  # the chunk size, once per chunk (threads split a chunk in blocks)
        if not chunks or chunks[-1] is not hist:
            chunks.append(hist)
            calls.append(len(hist))
        return original(hist, *args)

    monkeypatch.setattr(hamming_engine, "finalize_histograms", counting)
    queries, database, relevance = _data("class", n_q=50, n_db=1000, n_bits=128)
    # pretend the kernel does 2e6 pair-words per second and thread: a query is 1000 x 2 words = 1 ms,
    # so a 10 ms block is 10 queries at 1 thread
    monkeypatch.setattr(hamming_engine, "_PAIR_WORDS_PER_S", 2e6)
    monkeypatch.setattr(hamming_engine, "_BLOCK_SECONDS", 0.01)
    ft.evaluate(queries, database, **relevance, n_threads=1, progress=True)
    assert calls == [10] * 5
    calls.clear(), chunks.clear()
    ft.evaluate(queries, database, **relevance, n_threads=2, progress=True)
    # half the time per query with two threads: 20 queries, a multiple of 2 x threads
    assert calls == [20, 20, 10]
    calls.clear(), chunks.clear()
    ft.evaluate(queries, database, **relevance, n_threads=1)
    assert calls == [50]  # no progress: one chunk, as before


def test_block_size_rule():
    for n_db, n_words, n_threads in [(10**6, 1, 1), (10**6, 1, 2), (59000, 1, 2), (10**9, 16, 16), (7, 1, 3)]:
        bar, block = hamming_engine.progress_bar(False, 10, n_db, n_words, n_threads)
        assert bar is None and block is None
        bar, block = hamming_engine.progress_bar(True, 10, n_db, n_words, n_threads)
        bar.close()
        assert block == hamming_engine.progress_block(n_db, n_words, n_threads)
        seconds = n_db * n_words / (hamming_engine._PAIR_WORDS_PER_S * n_threads)
        step = 2 * n_threads
        assert block % step == 0 and block >= step
        # at least the target work per block, and no more than one step of queries beyond it
        assert block * seconds >= hamming_engine._BLOCK_SECONDS or block == step
        assert (block - step) * seconds < hamming_engine._BLOCK_SECONDS


def test_bar_on_stderr(capsys):
    queries, database, relevance = _data("class")
    ft.evaluate(queries, database, **relevance, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert "fasttie" in err and "100%" in err and "37/37" in err and "query/s" in err and "pairs/s" in err


def test_no_bar_unless_asked(capsys, monkeypatch):
    queries, database, relevance = _data("class")
    ft.evaluate(queries, database, **relevance)
    ft.evaluate(queries, database, **relevance, progress=False)
    # "auto" on a short run, even on a terminal
    monkeypatch.setattr(sys, "stderr", _Terminal())
    ft.evaluate(queries, database, **relevance, progress="auto")
    assert sys.stderr.getvalue() == ""
    monkeypatch.undo()
    # "auto" on a long run (pretend a slow kernel) but stderr is not a terminal
    monkeypatch.setattr(hamming_engine, "_PAIR_WORDS_PER_S", 1.0)
    ft.evaluate(queries, database, **relevance, progress="auto")
    assert capsys.readouterr().err == ""


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_auto_on_a_terminal_for_long_runs(monkeypatch):
    queries, database, relevance = _data("class")
    plain = ft.evaluate(queries, database, **relevance, metrics=["AP", "P@3"])
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    # 37 queries x 300 codes x 1 word at 2000 pair-words/s: about 5.5 s expected at one thread
    monkeypatch.setattr(hamming_engine, "_PAIR_WORDS_PER_S", 2000.0)
    with_bar = ft.evaluate(queries, database, **relevance, metrics=["AP", "P@3"], n_threads=1, progress="auto")
    _same(plain, with_bar)
    assert "37/37" in terminal.getvalue()
    # just under the threshold: no bar
    terminal.seek(0)
    terminal.truncate()
    seconds_per_query = 300 / 2000.0
    monkeypatch.setattr(hamming_engine, "_AUTO_SECONDS", 37 * seconds_per_query * (1 + 1e-9))
    ft.evaluate(queries, database, **relevance, n_threads=1, progress="auto")
    assert terminal.getvalue() == ""
    assert math.isclose(37 * seconds_per_query, 5.55)


def test_bad_progress_values():
    queries, database, relevance = _data("class")
    with pytest.raises(ValueError, match="progress must be True, False or 'auto'"):
        ft.evaluate(queries, database, **relevance, progress="yes")
    with pytest.raises(TypeError, match="progress must be True, False or 'auto'"):
        ft.evaluate(queries, database, **relevance, progress=1)
