"""Peers' own outputs and test vectors (trec_eval, gdeval, ndeval, ir_measures, pyndeval)."""
