"""Default behaviour of `Memory`: one SQLite file, an FTS5 index kept in step by triggers,
bm25 ranking over text and tags, and — with an embedding provider — hybrid ranking.

A query is cut into words and searched as ``"w1" OR "w2" ...`` (quoted, so no word is read
as FTS syntax); bm25 puts memories matching more and rarer words first, and the Porter
stemmer lets "tests" find "testing".
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import forwardpy

from liveforge.declarations.memory import Memory, MemoryItem, MemoryNotFound
from liveforge.impls.memory_vectors import embed, fuse, nearest, pack
from liveforge.kernel.files._statefolder import make_parent

__all__ = ["fts_query"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    embedding BLOB
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    text, tags, content='memories', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF text, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
    INSERT INTO memories_fts(rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
"""
_WORD = re.compile(r"\w+", re.UNICODE)
_COLUMNS = "id, text, tags, created, updated"
_ready: set[tuple[str, int]] = set()
"""Database files (path, inode) whose schema this process has made sure of."""
_CANDIDATES = 50
"""Rows each ranking contributes before the hybrid fusion."""


def fts_query(text: str) -> str:
    """``text`` as an FTS5 query: every word quoted, any of them may match."""
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(_WORD.findall(text.lower())))


@contextlib.contextmanager
def _connect(memory: Memory) -> Iterator[sqlite3.Connection]:
    path = Path(memory.path)
    make_parent(path)
    connection = sqlite3.connect(path, timeout=10)
    try:
        key = (str(path.resolve()), path.stat().st_ino if path.exists() else 0)
        if key not in _ready:  # the schema script costs more than a search
            connection.executescript(_SCHEMA)
            _ready.add((key[0], path.stat().st_ino))
        with connection:
            yield connection
    finally:
        connection.close()


def _item(row: tuple[int, str, str, float, float], score: float | None = None) -> MemoryItem:
    return MemoryItem(
        id=row[0], text=row[1], tags=json.loads(row[2]), created=row[3], updated=row[4], score=score
    )


def _clean(text: str, tags: list[str] | None) -> tuple[str, list[str]]:
    text = text.strip()
    if not text:
        raise ValueError("a memory needs text; say what is worth remembering.")
    return text, sorted({t.strip() for t in tags or [] if t.strip()})


@forwardpy.impl(Memory.write)
def write(self: Memory, text: str, tags: list[str] | None = None) -> MemoryItem:
    text, tags = _clean(text, tags)
    with _connect(self) as db:
        same = db.execute("SELECT id, tags FROM memories WHERE text = ?", (text,)).fetchone()
    if same is not None:  # remembered already: keep one, with the tags of both
        return self.edit(same[0], text, sorted({*json.loads(same[1]), *tags}))
    vector = embed(self.settings.embeddings, [text])[0] if self.settings.embeddings else None
    now = time.time()
    with _connect(self) as db:
        cursor = db.execute(
            "INSERT INTO memories(text, tags, created, updated, embedding) VALUES (?,?,?,?,?)",
            (text, json.dumps(tags), now, now, pack(vector)),
        )
        memory_id = cursor.lastrowid
    assert memory_id is not None
    return self.get(memory_id)


@forwardpy.impl(Memory.search)
def search(self: Memory, query: str, limit: int = 5) -> list[MemoryItem]:
    words = fts_query(query)
    if not words:
        return self.items(limit)
    with _connect(self) as db:
        rows = db.execute(
            "SELECT m.id, m.text, m.tags, m.created, m.updated, bm25(memories_fts, 1.0, 0.5) "
            "AS rank FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
            "WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?",
            (words, max(limit, _CANDIDATES) if self.settings.embeddings else limit),
        ).fetchall()
        ranked = [_item(row[:5], -row[5]) for row in rows]
        if self.settings.embeddings:
            vector = embed(self.settings.embeddings, [query])[0]
            close = nearest(db, vector, _CANDIDATES)
            by_id = {item.id: item for item in ranked}
            for memory_id, _ in close:
                if memory_id not in by_id:
                    by_id[memory_id] = _item(_row(db, memory_id))
            order = fuse([i.id for i in ranked], [i for i, _ in close])
            ranked = [by_id[i].model_copy(update={"score": s}) for i, s in order]
    return ranked[:limit]


def _row(db: sqlite3.Connection, memory_id: int) -> tuple[int, str, str, float, float]:
    row = db.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        raise MemoryNotFound(memory_id)
    return row


@forwardpy.impl(Memory.get)
def get(self: Memory, memory_id: int) -> MemoryItem:
    with _connect(self) as db:
        return _item(_row(db, memory_id))


@forwardpy.impl(Memory.items)
def items(self: Memory, limit: int | None = None) -> list[MemoryItem]:
    with _connect(self) as db:
        rows = db.execute(
            f"SELECT {_COLUMNS} FROM memories ORDER BY updated DESC, id DESC LIMIT ?",
            (-1 if limit is None else limit,),
        ).fetchall()
    return [_item(row) for row in rows]


@forwardpy.impl(Memory.edit)
def edit(self: Memory, memory_id: int, text: str, tags: list[str] | None = None) -> MemoryItem:
    old = self.get(memory_id)
    text, clean_tags = _clean(text, old.tags if tags is None else tags)
    vector = embed(self.settings.embeddings, [text])[0] if self.settings.embeddings else None
    with _connect(self) as db:
        db.execute(
            "UPDATE memories SET text = ?, tags = ?, updated = ?, embedding = ? WHERE id = ?",
            (text, json.dumps(clean_tags), time.time(), pack(vector), memory_id),
        )
    return self.get(memory_id)


@forwardpy.impl(Memory.forget)
def forget(self: Memory, memory_id: int) -> MemoryItem:
    item = self.get(memory_id)
    with _connect(self) as db:
        db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    return item


@forwardpy.impl(Memory.for_prompt)
def for_prompt(self: Memory, query: str, budget: int) -> str:
    if budget <= 0 or not Path(self.path).exists():
        return ""
    lines, used = [], 0
    for item in self.search(query, limit=20):
        line = item.line()
        cost = len(line) // 4 + 1  # about four characters per token
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)
