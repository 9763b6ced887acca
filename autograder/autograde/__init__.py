"""``grade autograde``: run the hidden suites on submissions and write Gradescope results."""
