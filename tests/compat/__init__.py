"""Tests of fasttie.compat, one file per module."""
