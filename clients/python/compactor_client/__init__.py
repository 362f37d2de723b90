"""A client for Compactor, on the Python standard library only (urllib)."""

from .client import CompactorClient, CompactorHttpError
from .types import (
    Artifact,
    ArtifactRef,
    ExpandResponse,
    FitResponse,
    HealthStatus,
    Prepared,
    PreparedSummary,
    Problem,
    StrategyResponse,
    TokensReport,
    TokensResponse,
    ValidateResponse,
)

__all__ = [
    "Artifact",
    "ArtifactRef",
    "CompactorClient",
    "CompactorHttpError",
    "ExpandResponse",
    "FitResponse",
    "HealthStatus",
    "Prepared",
    "PreparedSummary",
    "Problem",
    "StrategyResponse",
    "TokensReport",
    "TokensResponse",
    "ValidateResponse",
]
__version__ = "0.1.0"
