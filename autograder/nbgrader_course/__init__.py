"""``grade nbgrader``: the unit as an nbgrader course (source notebooks, checking_helper.py, nbgrader_config.py).

One notebook per module of course.yml: explanations, a locked setup cell (the documents' inputs), a
locked cell importing the checking helper (``checking_helper.py``, beside the notebooks), a solution cell per step, and
a graded, locked test cell per count, whose hidden cases sit between nbgrader's hidden-test markers.
``course_dir.write_course`` writes it; this package's ``__init__`` imports nothing, so that ``grade`` starts fast.
"""
