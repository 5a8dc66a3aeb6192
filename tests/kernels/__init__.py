"""Tests of fasttie._kernels, one file per kernel module."""
