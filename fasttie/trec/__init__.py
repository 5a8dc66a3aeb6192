"""TREC qrels and run files: fast columnar readers and trec_eval-compatible evaluation.

The file formats, and how strictly they are read, are described in :mod:`fasttie.trec.readers`.

Rows are stored grouped by query: the unique query ids sorted as strings (``strcmp`` order,
the order of trec_eval's output), and within a query in file order.

Modules, one concept each (all but the names below are package-internal):

- ``records``: :class:`Run` and :class:`Qrels`, the columnar records.
- ``readers``: :func:`read_run`, :func:`read_qrels`, and :func:`as_run`, :func:`as_qrels`: every
  input form (paths, records, dicts, pandas DataFrames, ranx objects) made a Run / Qrels once.
- ``table``: the block tokenizer and table reader both readers share.
- ``numeric``: exact float and integer parsing of a column.
- ``grouping``: row hashes, grouping by query, duplicate checks.
- ``join``: :func:`align` and :class:`Aligned`, the run joined with its judgments (with
  trec_eval's ``-M`` cut and ``-J`` filter).
- ``dict_join``: the same join of dicts (pytrec_eval's layout), without arrays of document ids.
- ``subtopics``: diversity qrels joined with a run, for alpha-nDCG.
- ``trec_only``: trec_eval's own measures (Rprec_mult, utility, binG, G, ndcg_rel, Rndcg, unj)
  for :func:`evaluate`.
- ``evaluation``: :func:`evaluate`.
- ``relstring``: :func:`relstring`, trec_eval's text of the first judgments of each ranking.
"""

from .evaluation import evaluate
from .join import Aligned, align
from .readers import as_qrels, as_run, read_qrels, read_run
from .records import Qrels, Run
from .relstring import relstring

__all__ = ["Qrels", "Run", "Aligned", "read_qrels", "read_run", "as_qrels", "as_run", "align", "evaluate",
           "relstring"]
