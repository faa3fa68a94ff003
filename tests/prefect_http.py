"""Raw HTTP calls to a Prefect server's API for tests, retried like Prefect's own client.

Prefect's server answers 503 "Service Unavailable" when its SQLite database is busy (its background services write
at the same time), and Prefect's client retries such answers. A test that talks to the API with plain urllib must do
the same, or it fails whenever a write of the server's own lands at the same moment.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

RETRY_FOR_SECONDS = 30.0
_RETRYABLE = frozenset({429, 502, 503})


def prefect_api(url: str, body: object | None = None, timeout: float = 10.0) -> Any:
    """The decoded JSON answer of a GET (no body) or POST (a JSON body) to `url`, retried on 429/502/503."""
    data = None if body is None else json.dumps(body).encode()
    deadline = time.monotonic() + RETRY_FOR_SECONDS
    while True:
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            if error.code not in _RETRYABLE or time.monotonic() > deadline:
                raise
            time.sleep(_retry_after(error))


def _retry_after(error: urllib.error.HTTPError) -> float:
    try:
        return min(float(error.headers.get("Retry-After", "")), 2.0)
    except ValueError:
        return 0.25
