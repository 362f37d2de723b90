"""CompactorClient: every endpoint of Compactor's API, version 1, over urllib."""

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Mapping, Optional, cast

from .types import (
    Artifact,
    ExpandResponse,
    FitResponse,
    HealthStatus,
    PreparedSummary,
    Problem,
    StrategyResponse,
    TokensResponse,
    ValidateResponse,
)

__all__ = ["CompactorClient", "CompactorHttpError"]


class CompactorHttpError(Exception):
    """An answer with a 4xx/5xx status, carrying the problem document the service sent.

    ``problem`` is None when the body was not JSON (a proxy's page, say);
    ``retry_after_seconds`` is the service's ``retry-after`` on a 429 or 503.
    """

    def __init__(self, status: int, problem: Optional[Problem], retry_after_seconds: Optional[float] = None):
        self.status = status
        self.problem = problem
        self.retry_after_seconds = retry_after_seconds
        if problem and problem.get("code"):
            message = "%s: %s" % (problem.get("code"), problem.get("detail", ""))
        else:
            message = "HTTP %d" % status
        super().__init__(message)


def _parse(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body.decode("utf-8"))
    except ValueError:
        return None


def _retry_after(status: int, header: Optional[str]) -> Optional[float]:
    if status not in (429, 503) or not header:
        return None
    try:
        seconds = float(header)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


class CompactorClient:
    """A client for Compactor.

    :param base_url: e.g. ``http://127.0.0.1:8080`` (a trailing slash is fine).
    :param api_key: sent as ``Authorization: Bearer <key>`` when the service has keys configured.
    :param timeout: per-call deadline in seconds (default 60), retries and their waits included.
    :param retries: retries after a 429 or 503 that carries ``retry-after``, waiting what it says
        (default 2). Every endpoint is safe to repeat. A wait that would pass the deadline is not
        taken; the error is raised instead. Other errors are never retried.

    Every method raises :class:`CompactorHttpError` on a 4xx/5xx answer, and urllib's
    ``URLError`` (or ``TimeoutError``/``socket.timeout``) when the service does not answer.
    A request is a dict with the API's fields, or keyword arguments, or both::

        client.fit({"messages": messages}, model="gpt-4o", target_fraction=0.6)
    """

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        timeout: float = 60.0,
        retries: int = 2,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self._sleep = sleep

    # -- transport -------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None, accept_503: bool = False) -> Any:
        deadline = time.monotonic() + self.timeout
        payload = json.dumps(body).encode("utf-8") if body is not None else None
        attempt = 0
        while True:
            try:
                return self._once(method, path, payload, deadline, accept_503)
            except CompactorHttpError as error:
                wait = error.retry_after_seconds
                if not wait or attempt >= self.retries or time.monotonic() + wait >= deadline:
                    raise
                attempt += 1
                self._sleep(wait)

    def _once(self, method: str, path: str, payload: Optional[bytes], deadline: float, accept_503: bool) -> Any:
        headers = {"accept": "application/json, application/problem+json"}
        if payload is not None:
            headers["content-type"] = "application/json"
        if self.api_key:
            headers["authorization"] = "Bearer %s" % self.api_key
        request = urllib.request.Request(self.base_url + path, data=payload, headers=headers, method=method)
        remaining = max(0.001, deadline - time.monotonic())
        try:
            with urllib.request.urlopen(request, timeout=remaining) as response:
                return _parse(response.read())
        except urllib.error.HTTPError as error:
            parsed = _parse(error.read())
            if accept_503 and error.code == 503:
                return parsed
            problem = cast(Problem, parsed) if isinstance(parsed, dict) else None
            raise CompactorHttpError(error.code, problem, _retry_after(error.code, error.headers.get("retry-after"))) from None

    @staticmethod
    def _body(request: Optional[Mapping[str, Any]], fields: Dict[str, Any]) -> Dict[str, Any]:
        body: Dict[str, Any] = dict(request or {})
        body.update(fields)
        return body

    # -- endpoints -------------------------------------------------------------------------

    def window(self, request: Optional[Mapping[str, Any]] = None, **fields: Any) -> StrategyResponse:
        """``POST /v1/window``: keep the newest runs, messages or tokens; drop the rest."""
        return cast(StrategyResponse, self._call("POST", "/v1/window", self._body(request, fields)))

    def compact(self, request: Optional[Mapping[str, Any]] = None, **fields: Any) -> StrategyResponse:
        """``POST /v1/compact``: clear, offload, truncate and dedupe old tool traffic (reversible)."""
        return cast(StrategyResponse, self._call("POST", "/v1/compact", self._body(request, fields)))

    def summarize(self, request: Optional[Mapping[str, Any]] = None, **fields: Any) -> StrategyResponse:
        """``POST /v1/summarize``: replace older history with a summary."""
        return cast(StrategyResponse, self._call("POST", "/v1/summarize", self._body(request, fields)))

    def fit(self, request: Optional[Mapping[str, Any]] = None, **fields: Any) -> FitResponse:
        """``POST /v1/fit``: compact, then summarize, then window, until the history fits its target."""
        return cast(FitResponse, self._call("POST", "/v1/fit", self._body(request, fields)))

    def expand(self, request: Optional[Mapping[str, Any]] = None, **fields: Any) -> ExpandResponse:
        """``POST /v1/expand``: put back every offloaded original referenced in a history."""
        return cast(ExpandResponse, self._call("POST", "/v1/expand", self._body(request, fields)))

    def artifact(self, artifact_id: str) -> Artifact:
        """``GET /v1/artifacts/{id}``: one offloaded original (404 once expired)."""
        return cast(Artifact, self._call("GET", "/v1/artifacts/" + urllib.parse.quote(artifact_id, safe="")))

    def prepared(self, prepared_id: str) -> PreparedSummary:
        """``GET /v1/prepared/{id}``: a summary fit prepares in the background (404 for another key's)."""
        return cast(PreparedSummary, self._call("GET", "/v1/prepared/" + urllib.parse.quote(prepared_id, safe="")))

    def tokens(self, request: Optional[Mapping[str, Any]] = None, **fields: Any) -> TokensResponse:
        """``POST /v1/tokens``: count a history's tokens as the service would."""
        return cast(TokensResponse, self._call("POST", "/v1/tokens", self._body(request, fields)))

    def validate(self, request: Optional[Mapping[str, Any]] = None, **fields: Any) -> ValidateResponse:
        """``POST /v1/validate``: check a history against its format's structural rules."""
        return cast(ValidateResponse, self._call("POST", "/v1/validate", self._body(request, fields)))

    def health(self, probe: str = "ready") -> HealthStatus:
        """``GET /health/ready`` (default) or ``/health/live``; a not-ready 503 is returned, not raised."""
        if probe not in ("ready", "live"):
            raise ValueError("probe must be 'ready' or 'live'")
        return cast(HealthStatus, self._call("GET", "/health/" + probe, accept_503=True))
