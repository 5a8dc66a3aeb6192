"""Tests of fasttie.hamming, one file per module."""
