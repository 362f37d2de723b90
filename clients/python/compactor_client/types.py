"""The shapes of Compactor's answers, as TypedDicts (plain dicts at run time).

They follow openapi/openapi.json; only the fields a caller usually reads are spelled out, and
every answer may carry more. Requests are plain dicts with the API's snake_case fields.
"""

from typing import Any, Dict, List, Optional, TypedDict

Message = Dict[str, Any]


class Problem(TypedDict, total=False):
    """The problem document (RFC 9457) of every 4xx/5xx answer."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    request_id: str
    errors: List[Dict[str, str]]


class HealthStatus(TypedDict, total=False):
    status: str
    reason: str


class TokensReport(TypedDict):
    before: int
    after: int
    saved: int
    counting: str
    tokenizer: str


class ArtifactRef(TypedDict, total=False):
    id: str
    message_index: int
    kind: str
    content: Any


class StrategyResponse(TypedDict, total=False):
    """What window, compact and summarize answer (fit adds to it)."""

    messages: List[Message]
    format: str
    applied: bool
    reason: str
    tokens: TokensReport
    usage: Dict[str, Any]
    actions: List[Dict[str, Any]]
    warnings: List[Dict[str, Any]]
    artifacts: List[ArtifactRef]
    cost: Dict[str, Any]


class Prepared(TypedDict):
    """A summary fit prepares in the background, or the prepared one a response spliced in."""

    id: str
    state: str
    covers: Dict[str, int]


class FitResponse(StrategyResponse, total=False):
    stages: List[Dict[str, Any]]
    target: int
    call_again_at: int
    summary: Optional[Dict[str, Any]]
    dropped: Optional[Dict[str, Any]]
    prepared: Prepared


class PreparedSummary(TypedDict, total=False):
    """``GET /v1/prepared/{id}``: a prepared summary's state, range and cost."""

    id: str
    state: str
    covers: Dict[str, int]
    usage: Optional[Dict[str, Any]]
    created_at: str
    error: str


class ExpandResponse(TypedDict, total=False):
    messages: List[Message]
    format: str
    restored: List[Any]
    missing: List[Any]


class Artifact(TypedDict):
    id: str
    kind: str
    tool_name: Optional[str]
    content: Any
    sha256: str
    created_at: str
    expires_at: str


class TokensResponse(TypedDict, total=False):
    total: int
    messages: List[Any]
    system: Any
    tools: Any
    occupancy: Any
    counting: str
    tokenizer: str
    format: str
    context_window: Optional[int]


class ValidateResponse(TypedDict, total=False):
    valid: bool
    format: str
    violations: List[Dict[str, Any]]
    warnings: List[Dict[str, Any]]
