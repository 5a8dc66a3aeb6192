"""Bad input to evaluate() raises a clear ValueError / TypeError naming the argument."""

import numpy as np
import pytest

import fasttie as ft

rng = np.random.default_rng(0)
Q = rng.integers(0, 2, (3, 16))
DB = rng.integers(0, 2, (10, 16))
QL = np.array([0, 1, 2])
DL = rng.integers(0, 3, 10)


def call(**overrides):
    args = dict(queries=Q, database=DB, query_labels=QL, db_labels=DL, metrics=("AP",))
    args.update(overrides)
    return ft.evaluate(**args)


@pytest.mark.parametrize(
    "overrides, error, match",
    [
        (dict(database=rng.integers(0, 2, (10, 12))), ValueError, "queries have 16 bits but database has 12"),
        (dict(queries=Q[0]), ValueError, "queries must be 2-D"),
        (dict(database=DB[:0]), ValueError, "database is empty"),
        (dict(queries=np.where(Q > 0, 1.0, np.nan)), ValueError, "NaN"),
        (dict(query_labels=QL[:2]), ValueError, "query_labels has 2 rows"),
        (dict(db_labels=DL[:5]), ValueError, "db_labels has 5 rows"),
        (dict(query_labels=QL.astype(float)), TypeError, "integer class ids"),
        (dict(query_labels=None), ValueError, "relevance is undefined"),
        (dict(query_labels=np.eye(3)[QL], db_labels=DL), ValueError, "both be 1-D"),
        (dict(query_labels=np.eye(3)[QL] * 2, db_labels=np.eye(3)[DL]), ValueError, "multi-hot 0/1"),
        (dict(query_labels=np.eye(3)[QL], db_labels=np.eye(4)[DL]), ValueError, "label columns"),
        # a column of class ids is not multi-hot with one label: both fixes are named
        (dict(query_labels=QL[:, None], db_labels=DL[:, None]), ValueError, r"labels\.ravel\(\).*two or more columns"),
        (dict(metrics=("AP@0",)), ValueError, "cutoff must be >= 1"),
        (dict(metrics=("AP@-3",)), ValueError, "cutoff must be >= 1"),
        (dict(metrics=("AP@x",)), ValueError, "not an integer"),
        (dict(metrics=("mAPP",)), ValueError, "did you mean"),
        (dict(metrics=()), ValueError, "metrics is empty"),
        (dict(metrics=("Rprec@5",)), ValueError, "takes no cutoff"),
        (dict(metrics=("P(radius=-1)",)), ValueError, "radius must be >= 0"),
        (dict(metrics=(5,)), TypeError, "strings"),
        (dict(ties="random"), ValueError, "ties must be one of"),
        (dict(ap_denominator="R"), ValueError, "ap_denominator must be one of"),
        (dict(gain="exp"), ValueError, "gain must be one of"),
        (dict(empty="nan"), ValueError, "empty must be one of"),
        (dict(empty=None), TypeError, "empty must be a string"),
        (dict(n_threads=0), ValueError, "n_threads must be in"),
        (dict(n_threads=1.5), TypeError, "n_threads must be an integer"),
        (dict(curves=[0, 5]), ValueError, "curves"),
    ],
)
def test_evaluate_errors(overrides, error, match):
    with pytest.raises(error, match=match):
        call(**overrides)


def test_empty_error_policy_names_the_count():
    labels = np.array([0, 1, 7])  # class 7 is absent from the database
    with pytest.raises(ValueError, match="1 of 3 queries have no relevant item"):
        call(query_labels=labels, db_labels=np.array([0, 1] * 5), empty="error")


@pytest.mark.parametrize(
    "relevance, error, match",
    [
        ((np.array([0, 1, 2]), np.array([0, 1])), ValueError, "n_queries \\+ 1"),
        ((np.array([0, 1, 2, 3]), np.array([0, 1, 10])), ValueError, "database ids"),
        ((np.array([0, 2, 2, 3]), np.array([4, 4, 1])), ValueError, "twice"),
        ((np.array([0, 1, 2, 3]), np.array([0, 1, 2]), np.array([1, -1, 1])), ValueError, ">= 0"),
        ((np.array([0, 1, 2, 3]), np.array([0, 1, 2]), np.array([1, 0.5, 1])), ValueError, "whole numbers"),
        ((np.array([0, 1, 2, 3]), np.array([0, 1, 2]), np.array([1, 2])), ValueError, "grades has shape"),
        ((np.array([0, 2, 1, 3]), np.array([0, 1, 2])), ValueError, "not decrease"),
        ([0, 1], TypeError, "relevance must be"),
    ],
)
def test_relevance_errors(relevance, error, match):
    with pytest.raises(error, match=match):
        ft.evaluate(Q, DB, relevance=relevance)


def test_labels_and_relevance_together():
    with pytest.raises(ValueError, match="not both"):
        call(relevance=(np.array([0, 0, 0, 0]), np.array([], dtype=int)))


def test_class_ids_just_under_2_24_take_the_sparse_path():
    """A few distinct class ids near 2**24 cost what small ids cost: no 2**24-sized tables."""
    import tracemalloc

    from fasttie.relevance import make_relevance

    big = (1 << 24) - 10 + np.array([0, 3, 7])
    spec = make_relevance(big[QL], big[DL], None, len(QL), len(DL))
    assert int(spec.db_labels.max()) < 3  # remapped to 0..n_classes-1
    small = ft.evaluate(Q, DB, QL, DL, metrics=["AP", "P@3"], ties="stable")
    tracemalloc.start()
    try:
        large = ft.evaluate(Q, DB, big[QL], big[DL], metrics=["AP", "P@3"], ties="stable")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak} bytes traced for 3 queries x 10 codes"
    for name, values in small.per_query.items():
        np.testing.assert_array_equal(large.per_query[name], values)


def test_errors_carry_their_argument_fix_and_kind():
    """An InputError holds the arguments it names, the fix and a tag as fields; rendered with
    another front end's names it reads in its words; the fields survive pickling (Dask)."""
    import pickle

    error = ft.InputError("{n_bits} is 0", argument="n_bits", fix="pack with a positive {n_bits}", kind="range")
    assert str(error) == "n_bits is 0; pack with a positive n_bits"
    assert error.render({"n_bits": "--bits"}) == "--bits is 0; pack with a positive --bits"
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.arguments, again.fix, again.kind) == (ft.InputError, ("n_bits",), error.fix, "range")
    with pytest.raises(ft.InputError) as caught:
        call(query_labels=QL[:2])
    assert caught.value.argument == "query_labels"
    with pytest.raises(ValueError) as caught:
        ft.parse_metrics(["mapp"])
    assert caught.value.kind == "unknown metric"


def test_the_command_line_renders_fields_not_text(monkeypatch, capsys, tmp_path):
    """The command line names an argument by its option from the error's fields; a name that is
    only in the text stays as it is (nothing parses the message)."""
    from fasttie import cli

    np.save(tmp_path / "q.npy", Q)
    np.save(tmp_path / "db.npy", DB)
    np.save(tmp_path / "ql.npy", QL)
    np.save(tmp_path / "dl.npy", DL)
    argv = ["evaluate", "--queries", tmp_path / "q.npy", "--database", tmp_path / "db.npy", "--query-labels",
            tmp_path / "ql.npy", "--db-labels", tmp_path / "dl.npy", "--quiet"]
    for raised, shown in ((ft.InputError("{n_threads} is wrong", argument="n_threads"), "--threads is wrong"),
                          (ft.InputError("n_threads is wrong"), "n_threads is wrong")):
        def fail(*args, error=raised, **kwargs):
            raise error

        monkeypatch.setattr(ft, "evaluate", fail)
        assert cli.main([str(a) for a in argv]) == 2
        assert capsys.readouterr().err == f"fasttie: error: {shown}\n"
