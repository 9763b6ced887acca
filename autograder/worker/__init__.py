"""The student side of the trust boundary.

Everything in this package runs in the worker process that imports and executes student code. It is
self-contained on purpose: it imports only the standard library, torch and safetensors, never the rest
of ``autograder`` (which holds the reference solutions, the hidden suites and the scoring). The trusted
side imports ``autograder.worker.wire`` to speak the same protocol.
"""
