"""Drop-in stand-ins for other evaluation libraries' interfaces, over fasttie's engine.

:mod:`fasttie.compat.pytrec_eval` answers pytrec_eval's calls (BEIR, mteb and
sentence-transformers call it): ``import fasttie.compat.pytrec_eval as pytrec_eval``.
"""
