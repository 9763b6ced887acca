"""One module per ``grade`` verb, each with a plain Python ``main(...)``: what the verb does, with no click.

``autograder/cli.py`` declares the options and calls these; a script, a notebook or a test can call them
the same way. A mistake of the user's is raised as ``usage.UsageError`` (the CLI prints it and exits 2);
``main`` returns the process's exit code.
"""
