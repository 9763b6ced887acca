"""Sample submission: correct, written with explicit Python loops where the book shows loops."""
