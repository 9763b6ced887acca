"""Facts derived from a request, remembered per request object.

A batch sends the same cached request objects (``check._cached``) to every submission: what is derived
from one (its packed frame, the stand-ins it builds) is computed once. Requests are never changed once
built; each entry keeps its request alive, so an ``id`` is never reused while remembered.
"""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class PerRequest(Generic[T]):
    def __init__(self, derive: Callable[[dict], T], limit: int = 4096):
        self.derive = derive
        self.limit = limit  # requests built afresh each time (dropout, raises) must not pile up
        self._seen: dict[int, tuple[dict, T]] = {}

    def __call__(self, request: dict) -> T:
        hit = self._seen.get(id(request))
        if hit is None or hit[0] is not request:
            if len(self._seen) >= self.limit:
                self._seen.clear()
            hit = self._seen[id(request)] = (request, self.derive(request))
        return hit[1]
