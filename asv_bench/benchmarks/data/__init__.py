"""Seeded data generators and baselines shared by the asv benchmarks and ``scripts/bench_*.py``.

The asv modules import them relatively (``from .data.ranking import make_ranking_data``); a
script puts ``asv_bench/`` on ``sys.path`` and imports them from the package
(``from benchmarks.data.synthetic import make_hashing_data``). Importing them makes no data and
adds no benchmark (no name here starts with asv's prefixes ``time_``, ``peakmem_``, ...).

* ``synthetic``: class-correlated hashing codes (fasttie.datasets) and their converters;
* ``baselines``: the numpy and faiss baselines of the Hamming benchmarks;
* ``ranking``: graded labels and tied scores of ``rank_evaluate``, ranx's inputs;
* ``diversity``: subtopic judgments of ``alpha_ndcg``, pyndeval's inputs;
* ``lambdarank``: labels and scores of ``lambdarank``, the numpy baseline, LightGBM's settings;
* ``trec_files``: qrels and run files of ``trec.evaluate``, pytrec_eval's side.
"""
