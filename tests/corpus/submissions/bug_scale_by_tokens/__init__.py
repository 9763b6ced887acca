"""Reference solutions for the attention unit (chapter 3 of *Build a Large Language Model (From Scratch)*).

Solution code sits between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` markers; ``grade assign``
strips it to produce ``exercises/``.
"""
