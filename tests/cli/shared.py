"""What the tests of the command share: the small hashing data in every input form the command
reads (the ``data`` fixture), in-process runs, and parsers of the printed tables."""

import os

import numpy as np
import pytest

import fasttie as ft
from fasttie import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QRELS = os.path.join(ROOT, "tests", "data", "qrels.txt")
RUN = os.path.join(ROOT, "tests", "data", "run.txt")
N_QUERIES, N_DB = 24, 300
METRICS = ["AP", "AP@50", "nDCG@50", "P@10", "R@20", "P(radius=20)"]


def run_main(capsys, *argv):
    """(exit code, stdout, stderr) of an in-process run."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Small hashing data saved in every input form the CLI reads, plus the arrays."""
    folder = tmp_path_factory.mktemp("cli")
    q, db, ql, dl = ft.datasets.synthetic_hashing(N_QUERIES, N_DB, 64, 4, flip=0.3, seed=3)
    arrays = {"queries": ft.unpack_codes(q), "database": ft.unpack_codes(db), "query_labels": ql, "db_labels": dl}
    paths = {}
    for name, array in arrays.items():
        paths[name] = str(folder / f"{name}.npy")
        np.save(paths[name], array)
    np.savez(folder / "all.npz", **arrays, extra=np.arange(3))
    (folder / "x.txt").write_text("1 0\n0 1\n")
    ft.evaluate(q, db, ql, dl, metrics=["AP"]).save(folder / "one.json")
    np.save(folder / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(folder / "queries_packed.npy", np.packbits(arrays["queries"], axis=1, bitorder="little"))
    np.save(folder / "database_packed.npy", np.packbits(arrays["database"], axis=1, bitorder="little"))
    rng = np.random.default_rng(5)
    multihot_q = (rng.random((N_QUERIES, 5)) < 0.3).astype(np.uint8)
    multihot_db = (rng.random((N_DB, 5)) < 0.3).astype(np.uint8)
    np.save(folder / "mh_q.npy", multihot_q)
    np.save(folder / "mh_db.npy", multihot_db)
    # listed relevance: 0-6 relevant ids per query with grades 1-3
    sizes = rng.integers(0, 7, N_QUERIES)
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    indices = np.concatenate([rng.choice(N_DB, s, replace=False) for s in sizes])
    grades = rng.integers(1, 4, len(indices))
    np.savez(folder / "rel.npz", indptr=indptr, indices=indices, grades=grades)
    # what the conformance review found: tanh outputs, a column of class ids, a scipy matrix
    # whose shape does not match the codes, a result file without curves
    np.save(folder / "tanh.npy", np.tanh(rng.standard_normal((N_QUERIES, 64))))
    np.save(folder / "ql_column.npy", arrays["query_labels"][:, None])
    np.save(folder / "dl_column.npy", arrays["db_labels"][:, None])
    np.savez(folder / "rel_wrong_shape.npz", indptr=indptr, indices=indices % (N_DB - 1), data=grades,
             shape=np.array([N_QUERIES, N_DB - 1]), format=np.array("csr"))
    return {
        "dir": folder, "paths": paths, "arrays": arrays, "multihot": (multihot_q, multihot_db),
        "csr": (indptr, indices, grades),
    }


def label_args(data):
    p = data["paths"]
    return ["--queries", p["queries"], "--database", p["database"], "--query-labels", p["query_labels"],
            "--db-labels", p["db_labels"]]


def library(data, metrics=METRICS, **options):
    a = data["arrays"]
    return ft.evaluate(a["queries"], a["database"], a["query_labels"], a["db_labels"], metrics=metrics, **options)


def parse_table(out):
    """{metric: (value, convention)} from the evaluate table."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("metric"))
    rows = {}
    for line in lines[start + 1:]:
        name, value, conv = line.split(None, 2)
        rows[name] = (float(value), conv)
    return rows


def parse_trec(out):
    values = {}
    for line in out.strip().splitlines():
        name, qid, value = line.split("\t")
        if name.strip() != "runid":
            values[(name.strip(), qid)] = float(value)
    return values
