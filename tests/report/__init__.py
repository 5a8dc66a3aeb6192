"""Tests of fasttie.report, one file per module."""
