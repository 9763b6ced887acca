"""What a person sees of a grade: feedback pages, pictures of attention weights, the class dashboard.

- ``evidence``: the arrays of a failing public case (and, of a hidden case, only its shape, dtype and how
  many entries differ), kept on the trusted side when a case fails; torch only.
- ``misconceptions``: the ids diagnosed (``feedback/catalogue.py``) as ``misconception:<id>`` tags, the class
  counts and their labels; never read back from the words.
- ``heatmaps``: expected / yours / difference pictures, drawn only when one is needed with ``drawing`` (Pillow),
  in ``colormaps``' colours (matplotlib's tables, without matplotlib).
- ``cards``: one card per step, a ``outputs/outcomes.StepOutcome``, from a results.json and its outcomes or from
  ``grade check``'s: the same words.
- ``feedback_page``: the self-contained HTML page (and the fragment Gradescope shows).
- ``gradescope_html``: that fragment in results.json (``output_format: "html"``), and its pictures back out.
- ``dashboard``: ``summary.html``, the class's page; ``changes``: who gained or lost points on a regrade.
- ``terminal_grid``: a small failing case drawn in the terminal (rich).
"""
