"""Numba kernels. Nothing here validates input: the facades do (see STYLE.md habit 1)."""
