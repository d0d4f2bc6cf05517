"""Vectors for memory search: embeddings over plain HTTP, nearest neighbours, rank fusion.

Embeddings come from an OpenAI-compatible ``POST {base_url}/embeddings`` (OpenAI, vLLM, LM
Studio, Ollama's /v1) or Ollama's own ``POST {base_url}/api/embed``. Vectors are stored as
float32 bytes next to each memory; the nearest ones are found by cosine similarity over the
rows that have one (a project keeps thousands of memories, not millions). Full-text and
vector rankings are merged by reciprocal rank fusion, which needs no score calibration.
"""

from __future__ import annotations

import array
import math
import os
import sqlite3

import httpx

from liveforge.declarations.memory import EmbeddingError
from liveforge.declarations.tool_settings import EmbeddingSettings

__all__ = ["embed", "fuse", "nearest", "pack"]

RRF_K = 60
"""The usual constant of reciprocal rank fusion: 1 / (k + rank)."""


def embed(settings: EmbeddingSettings | None, texts: list[str]) -> list[list[float]]:
    """One vector per text from the configured provider."""
    if settings is None:
        raise EmbeddingError("no embedding provider is configured ([tool.liveforge.tools.memory])")
    base = settings.base_url.rstrip("/")
    if settings.protocol == "ollama":
        url, body, headers = f"{base}/api/embed", {"model": settings.model, "input": texts}, {}
    else:
        key = os.environ.get(settings.api_key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        url, body = f"{base}/embeddings", {"model": settings.model, "input": texts}
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=30.0)
        response.raise_for_status()
        data = response.json()
        if settings.protocol == "ollama":
            vectors = [list(map(float, v)) for v in data["embeddings"]]
        else:
            ordered = sorted(data["data"], key=lambda d: d.get("index", 0))
            vectors = [list(map(float, d["embedding"])) for d in ordered]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise EmbeddingError(
            f"embedding request to {url} failed ({type(exc).__name__}: {exc}); check "
            "base_url, model and the key in [tool.liveforge.tools.memory.embeddings]."
        ) from None
    if len(vectors) != len(texts):
        raise EmbeddingError(f"{url} returned {len(vectors)} vectors for {len(texts)} texts")
    return vectors


def pack(vector: list[float] | None) -> bytes | None:
    """A vector as float32 bytes for the database (None stays None)."""
    return None if vector is None else array.array("f", vector).tobytes()


def _unpack(data: bytes) -> array.array[float]:
    values = array.array("f")
    values.frombytes(data)
    return values


def nearest(db: sqlite3.Connection, vector: list[float], limit: int) -> list[tuple[int, float]]:
    """(memory id, cosine similarity) of the stored vectors closest to ``vector``."""
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    scored = []
    for memory_id, data in db.execute(
        "SELECT id, embedding FROM memories WHERE embedding IS NOT NULL"
    ):
        other = _unpack(data)
        if len(other) != len(vector):
            continue  # written with another embedding model
        dot = sum(a * b for a, b in zip(vector, other, strict=True))
        other_norm = math.sqrt(sum(v * v for v in other)) or 1.0
        scored.append((memory_id, dot / (norm * other_norm)))
    scored.sort(key=lambda pair: pair[1], reverse=True)
    return scored[:limit]


def fuse(*rankings: list[int]) -> list[tuple[int, float]]:
    """Ids from several rankings merged by reciprocal rank fusion, best first."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, memory_id in enumerate(ranking, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda pair: pair[1], reverse=True)
