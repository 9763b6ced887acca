"""The trusted side of grading: start workers, send them cases, compare what comes back."""
