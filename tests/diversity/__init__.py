"""Tests of fasttie.diversity (test_diversity.py: the package's own code)."""
