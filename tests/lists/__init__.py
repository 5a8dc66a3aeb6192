"""Tests of fasttie.lists, one file per module."""
