"""Tests that cut across the package: the oracles, properties, numerics, policies, docs, layers and layout."""
