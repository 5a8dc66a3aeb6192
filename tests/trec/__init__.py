"""Tests of fasttie.trec, one file per module."""
