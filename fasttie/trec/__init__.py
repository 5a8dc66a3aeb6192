"""TREC qrels and run files: fast columnar readers and trec_eval-compatible evaluation.

Formats (whitespace-separated, one record a line; blank lines and comment lines, whose first
non-blank character is ``#``, are skipped, as trec_eval 10.0 skips them):

- qrels: ``qid iter docno rel``. The second column is kept as text: diversity qrels (TREC Web
  track, ndeval) put the subtopic there. ``rel`` is an integer grade; negative grades (spam
  judgments) are judged non-relevant.
- run: ``qid Q0 docno rank score tag``. The ``Q0`` and ``rank`` columns are ignored, as
  trec_eval does: the ranking comes from the scores alone. Text after the tag is ignored
  (trec_eval reserves it; its test run ``results.trunc`` has some).

The readers parse the file in blocks with numpy (no per-line Python code on well-formed input),
which makes them several times faster than the usual ``line.split()`` loop. Parsing is strict
otherwise: a wrong number of columns (fewer than six in a run, other than four in qrels), a
grade or score that is not a number, a NaN or infinite score, and a duplicate ``(qid, docno)``
pair in a run (``(qid, iter, docno)`` in qrels) raise ``ValueError`` naming the file and the
1-based line number.

Rows are stored grouped by query: the unique query ids sorted as strings (``strcmp`` order,
the order of trec_eval's output), and within a query in file order.

Modules, one concept each (all but the names below are package-internal):

- ``records``: :class:`Run` and :class:`Qrels`, the columnar records.
- ``readers``: :func:`read_run`, :func:`read_qrels` and the coercion of paths / dicts.
- ``table``: the block tokenizer and table reader both readers share.
- ``numeric``: exact float and integer parsing of a column.
- ``grouping``: row hashes, grouping by query, duplicate checks.
- ``join``: :func:`align` and :class:`Aligned`, the run joined with its judgments.
- ``subtopics``: diversity qrels joined with a run, for alpha-nDCG.
- ``evaluation``: :func:`evaluate`.
"""

from .evaluation import evaluate
from .join import Aligned, align
from .readers import read_qrels, read_run
from .records import Qrels, Run

__all__ = ["Qrels", "Run", "Aligned", "read_qrels", "read_run", "align", "evaluate"]
