"""Tests of the grader in one piece: the grade CLI, its sandbox and workers, on classes built where used."""
