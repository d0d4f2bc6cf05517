"""Several projects behind one gateway: each its own `Gateway` (store, worker, live runtime),
requests routed by their `project` field.

A gateway of one project needs no `project` in requests, as before projects existed. With
several, a request about sessions or runs must name one (`projects.list` gives the names);
`abort`, `approve` and `deny` find the project from the run they name. `health` without a
project covers them all.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from liveforge.gateway.core import Client, Gateway, GatewayError
from liveforge.gateway.protocol import PROTOCOL_REVISION, PROTOCOL_VERSION

__all__ = ["Hub", "project_names"]


def project_names(specs: list[str]) -> list[tuple[str, Path]]:
    """(name, folder) for each `--project` value: `DIR` (named after the folder) or
    `NAME=DIR`; raises ValueError for a name given twice, saying how to tell them apart."""
    out: list[tuple[str, Path]] = []
    for spec in specs:
        name, sep, folder = spec.partition("=")
        path = Path(folder if sep else spec).expanduser().resolve()
        name = name if sep else path.name
        if any(n == name for n, _ in out):
            raise ValueError(
                f"two projects are named {name!r}; name one with --project OTHER={path}"
            )
        out.append((name, path))
    return out


class Hub:
    """The projects a gateway serves, by name."""

    def __init__(self, projects: list[Gateway]) -> None:
        if not projects:
            raise ValueError("a gateway serves at least one project")
        self.projects = {gateway.name: gateway for gateway in projects}

    async def start(self) -> None:
        """Start every project's dispatcher."""
        for gateway in self.projects.values():
            await gateway.start()

    async def stop(self) -> None:
        """Stop every project (their workers end)."""
        await asyncio.gather(*(g.stop() for g in self.projects.values()))

    def forget(self, client: Client) -> None:
        """A client disconnected."""
        for gateway in self.projects.values():
            gateway.forget(client)

    def listing(self) -> list[dict[str, Any]]:
        """The projects as `projects.list` and `connect` give them: name, folder, model."""
        return [
            {"project": g.name, "path": str(g.project), "model": g.model}
            for g in self.projects.values()
        ]

    def hello(self) -> dict[str, Any]:
        """What `connect` and GET /health answer: the protocol, the projects by name and
        folder, and for a gateway of one project its folder as `project` (as before
        projects existed)."""
        hello: dict[str, Any] = {
            "protocol": PROTOCOL_VERSION,
            "revision": PROTOCOL_REVISION,
            "projects": self.listing(),
        }
        if len(self.projects) == 1:
            hello["project"] = str(next(iter(self.projects.values())).project)
        return hello

    def project(self, name: str) -> Gateway:
        """The project `name`; the only one when `name` is empty and there is one."""
        if not name and len(self.projects) == 1:
            return next(iter(self.projects.values()))
        names = ", ".join(self.projects)
        if not name:
            raise GatewayError(
                f"this gateway serves several projects ({names}); say which in the request's "
                "project field"
            )
        gateway = self.projects.get(name)
        if gateway is None:
            raise GatewayError(f"no project {name!r} here; the projects are: {names}")
        return gateway

    async def request(self, client: Client | None, message: Any) -> dict[str, Any]:
        """Answer one client request, routed to its project."""
        if message.type == "projects.list":
            return {"projects": self.listing()}
        if message.type == "health" and not message.project and len(self.projects) > 1:
            healths = [await g.request(client, message) for g in self.projects.values()]
            return {"ok": True, **self.hello(), "projects": healths}
        if message.type == "abort":
            return await self._by_run(message.run).request(client, message)
        if message.type in ("approve", "deny"):
            return await self._by_run(message.request.split("/", 1)[0]).request(client, message)
        return await self.project(message.project).request(client, message)

    def _by_run(self, run: str) -> Gateway:
        """The project that knows the run `run` (the first one when none does: it refuses)."""
        for gateway in self.projects.values():
            if gateway.store.run(run) is not None:
                return gateway
        return next(iter(self.projects.values()))
