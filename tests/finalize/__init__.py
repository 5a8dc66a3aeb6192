"""Tests of fasttie.finalize, one file per module."""
