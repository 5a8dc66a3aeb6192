"""The finalizer's host side, shared by both doors: tie statistics -> metric values.

==============  ==============================================================================
``plan``        :class:`FinalizePlan`: what one call asks the finalize kernels for (cutoffs,
                depths, discounts, gains, ratios, the kernel variant), built once per call
``values``      options and metric values: cutoffs, depths, gain tables, the empty-query policy,
                the kernels' quantities -> per-query values
``spread``      ``spread=True``: each metric's standard deviation over the tie orders
``extremes``    ``spread=True`` / ``"range"``: each metric's lowest and highest value over them
==============  ==============================================================================

Nothing is imported here: each door imports the module it needs.
"""
