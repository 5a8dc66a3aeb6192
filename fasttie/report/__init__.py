"""Reports of Results: tables and files, the comparison of methods, tables for papers.

================  ============================================================================
``tables``        metric tables with the convention of each metric, CSV, trec_eval-style lines
``significance``  :func:`fasttie.compare`: paired tests, bootstrap intervals, corrections, the
                  tie-order verdict between methods
``paper_table``   a comparison as a table for a paper: LaTeX, Markdown, HTML, pandas
================  ============================================================================

Figures are :mod:`fasttie.plots` (matplotlib, optional; a public import path of its own).
"""
