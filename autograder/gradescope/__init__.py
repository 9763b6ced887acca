"""``grade gradescope``: the autograder zip for Gradescope (instructor-only: it holds solutions and suites).

Layout of the zip (https://gradescope-autograders.readthedocs.io/en/latest/specs/)::

    setup.sh          run once when Gradescope builds the image: Python 3.11, pinned torch CPU, the kit
    run_autograder    run for each submission: results/results.json, whatever happens
    requirements.txt  the pinned grading environment
    pyproject.toml, README.md, course.yml, solutions/, autograder/ (with suites/)
"""
