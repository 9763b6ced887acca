"""A real Jupyter kernel for the tests, on local sockets instead of TCP ports.

jupyter_client picks a kernel's five TCP ports by binding port 0 and closing the socket, then starts the kernel,
which binds them again: on a busy machine another process (a Dask worker, a browser, another test's kernel) can take
one in between, and the kernel dies with "Address already in use" (most likely where kernels start in several
processes at once, as in the hand-in corpus's labelling). A kernel on Linux's abstract Unix sockets
(``ipc://@name``) has no port to lose: the name is drawn from a UUID, binds nothing on disk and leaves nothing behind.
"""
from __future__ import annotations

import uuid

from jupyter_client.manager import AsyncKernelManager
from traitlets import default


class LocalSocketKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager with its sockets in Linux's abstract namespace."""

    @default("transport")
    def _local_sockets(self) -> str:
        return "ipc"

    @default("ip")
    def _a_name_of_its_own(self) -> str:
        return f"@jupyter-kernel-{uuid.uuid4().hex}"


def notebook_client(nb, **options):
    """nbclient's ``NotebookClient`` for ``nb``, its kernel on local sockets; ``options`` as NotebookClient's."""
    from nbclient import NotebookClient  # noqa: PLC0415 - Jupyter's, from the test extra; slow to load

    return NotebookClient(nb, kernel_manager_class=LocalSocketKernelManager, **options)
