"""fasttie.diversity.inputs: the diversity doors' inputs, validated and packed. Subtopic masks
hold bit s of row i exactly where y_true[i, s] is 1 (read back here bit by bit); run keys order
equal scores as each tie rule says (document ids ascending, descending, or row order), keys
keep the order of any ids (strings, integers, large unsigned); cutoffs are the sorted set with
each request's column; bad input is refused naming the argument."""

import math

import numpy as np
import pytest

from fasttie.diversity.inputs import check_cutoffs, empty_value, prepare_inputs


def _bits(masks, n_subtopics):
    """(n, n_subtopics) bool matrix read back from the (n, n_words) uint64 masks."""
    out = np.zeros((len(masks), n_subtopics), dtype=bool)
    for i in range(len(masks)):
        for s in range(n_subtopics):
            out[i, s] = (int(masks[i, s // 64]) >> (s % 64)) & 1
    return out


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("n_subtopics", [1, 5, 64, 70, 130])
def test_masks_hold_y_true(seed, n_subtopics):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 20))
    y_true = rng.random((n, n_subtopics)) < 0.3
    form = [y_true, y_true.astype(np.int8), y_true.astype(float)][seed % 3]
    inputs = prepare_inputs(form, rng.random(n), None, None, "average")
    assert inputs.masks.shape == (n, max(1, -(-n_subtopics // 64)))
    assert np.array_equal(_bits(inputs.masks, n_subtopics), y_true)
    assert not inputs.masks.flags.writeable and not inputs.scores.flags.writeable


def _id_rank(ids):
    """Rank of each id among the distinct ids (their own order: numbers as numbers, strings as strings)."""
    order = sorted(set(ids.tolist()))
    return np.array([order.index(x) for x in ids.tolist()])


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("kind", ["str", "int", "uint64"])
def test_keys_follow_the_tie_rule(seed, kind):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, int(rng.integers(1, 5)))
    n = int(sizes.sum())
    pool = rng.choice(10**6, n, replace=False)
    ids = {"str": np.array([f"d{x}" for x in pool]), "int": pool - 5 * 10**5,
           "uint64": pool.astype(np.uint64) + np.uint64(2**63)}[kind]
    y_true, y_pred = rng.random((n, 3)) < 0.5, rng.integers(0, 3, n).astype(float)
    rank = _id_rank(ids)
    for ties, expected in (("pyndeval", rank), ("trec", -rank), ("stable", np.arange(n)), ("average", np.arange(n))):
        inputs = prepare_inputs(y_true, y_pred, sizes, ids if ties != "stable" else None, ties)
        # the keys need only order as expected (equal scores rank by key ascending)
        assert np.array_equal(np.argsort(inputs.run_keys, kind="stable"), np.argsort(expected, kind="stable")), ties
    inputs = prepare_inputs(y_true, y_pred, sizes, ids, "average")
    assert np.array_equal(np.argsort(inputs.ideal_keys, kind="stable"), np.argsort(rank, kind="stable"))
    assert inputs.offsets.tolist() == [0] + np.cumsum(sizes).tolist() and inputs.sizes.tolist() == sizes.tolist()


@pytest.mark.parametrize("seed", range(10))
def test_cutoffs(seed):
    rng = np.random.default_rng(seed)
    ks = [int(k) for k in rng.integers(1, 30, int(rng.integers(1, 8)))]
    unique, columns = check_cutoffs(ks)
    assert unique.tolist() == sorted(set(ks)) and [unique[c] for c in columns] == ks
    assert check_cutoffs(np.int64(7))[0].tolist() == [7]


def test_empty_values():
    assert empty_value("zero") == 0.0 and empty_value("one") == 1.0 and math.isnan(empty_value("skip"))
    assert empty_value("error") is None and empty_value(0.25) == 0.25 and empty_value(np.int64(2)) == 2.0
    with pytest.raises(ValueError, match="empty must be a number or one of"):
        empty_value("none")
    with pytest.raises(TypeError, match="empty must be a number"):
        empty_value(True)


@pytest.mark.parametrize("arguments, error, fragment", [
    ((np.ones((2, 2)), [1.0, 2.0], None, None, "trec"), ValueError, "ties='trec' orders equal scores by document id"),
    ((np.ones((2, 2)), [1.0, np.nan], None, None, "average"), ValueError, "NaN or +inf score at row 1"),
    ((np.ones((2, 2)), [1.0], None, None, "average"), ValueError, "y_pred must be 1-D with one score per row"),
    ((np.full((2, 2), 2), [1.0, 2.0], None, None, "average"), ValueError, "y_true[0, 0] is 2"),
    ((np.ones(2), [1.0, 2.0], None, None, "average"), ValueError, "y_true must be 2-D"),
    ((np.ones((0, 2)), [], None, None, "average"), ValueError, "y_true has no rows"),
    ((np.ones((2, 2)), [1.0, 2.0], None, ["a", "a"], "average"), ValueError, "document 'a' appears twice in query 0"),
    ((np.ones((2, 2)), [1.0, 2.0], None, [0.5, 1.5], "average"), TypeError, "doc_ids must be strings or integers"),
    ((np.ones((2, 2)), [1.0, 2.0], None, None, "random"), ValueError, "ties must be one of"),
    ((np.ones((2, 2)), [1.0, 2.0], [1, 2], None, "average"), ValueError, "group sizes sum to 3"),
])
def test_bad_input(arguments, error, fragment):
    with pytest.raises(error) as raised:
        prepare_inputs(*arguments)
    assert fragment in str(raised.value), str(raised.value)
    with pytest.raises(ValueError, match="k is empty"):
        check_cutoffs([])
    with pytest.raises(TypeError, match="k must be an integer"):
        check_cutoffs("5")
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        check_cutoffs([5, 0])
