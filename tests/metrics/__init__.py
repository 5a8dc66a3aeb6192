"""Tests of fasttie.metrics, one file per module."""
