"""``grade export``: turn a folder of results.json into a gradebook file for Canvas, Moodle or a plain CSV.

Light on purpose: nothing here imports torch or the grading machinery, only the course schema.
"""
