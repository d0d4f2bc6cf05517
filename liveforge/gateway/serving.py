"""Running the gateway: bind rules, uvicorn, and a clean shutdown."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from liveforge.gateway.settings import GatewaySettings, ScheduleEntry
from liveforge.kernel.errors import ConfigError
from liveforge.kernel.live._holders import freeze_own

if TYPE_CHECKING:
    from liveforge.gateway.core import Gateway
    from liveforge.gateway.hub import Hub

__all__ = ["is_loopback", "serve"]

TOKEN_VARIABLE = "LIVEFORGE_GATEWAY_TOKEN"


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str, allowed_hosts: tuple[str, ...] = ()) -> None:
    """Refuse to listen beyond loopback, or to answer to names beyond loopback, without a
    token."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"listening on {host} lets other machines drive this project; set a token in "
            f"{TOKEN_VARIABLE} (clients send it in connect), or listen on 127.0.0.1",
            key="serve.host",
        )
    from liveforge.gateway.trust import is_loopback_name

    beyond = [name for name in allowed_hosts if not is_loopback_name(name)]
    if beyond and not token:
        raise ConfigError(
            f"answering to {', '.join(beyond)} lets whoever reaches that name drive this "
            f"project; set a token in {TOKEN_VARIABLE} (clients send it in connect), or "
            "drop --allow-host",
            key="serve.allow_host",
        )


def serve(
    projects: Path | list[tuple[str, Path]],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str = "",
    allowed_origins: tuple[str, ...] = (),
    allowed_hosts: tuple[str, ...] = (),
    mode: str = "",
    announce: TextIO | None = None,
) -> None:
    """Serve the projects ((name, folder) pairs, or one folder) until interrupted; prints the
    address once it listens. Requests must be addressed to a loopback name, to `host` or to
    one of `allowed_hosts` (see `liveforge.gateway.trust`). `mode` is the permission mode
    (empty: each project's `[tool.liveforge.permissions]`, else ask)."""
    check_bind(host, token, allowed_hosts)
    if isinstance(projects, Path):
        projects = [(projects.name, projects)]
    trust = _Trust(token, allowed_origins, allowed_hosts)
    asyncio.run(_serve(projects, host, port, trust, mode, announce or sys.stdout))


class _Trust(NamedTuple):
    """Who may drive the gateway: its token, browser origins and names besides its own."""

    token: str
    origins: tuple[str, ...]
    hosts: tuple[str, ...]


async def _serve(
    projects: list[tuple[str, Path]],
    host: str,
    port: int,
    trust: _Trust,
    mode: str,
    announce: TextIO,
) -> None:
    import uvicorn

    from liveforge.gateway.app import build_app

    hub, extras = _projects(projects, mode)
    await hub.start()
    for extra in extras:
        await extra.start()
    app = build_app(
        hub,
        token=trust.token,
        allowed_origins=trust.origins,
        bind=host,
        allowed_hosts=trust.hosts,
    )
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            ws="websockets-sansio",
            ws_per_message_deflate=False,
        )
    )
    task = asyncio.create_task(server.serve())
    try:
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            _settle()
            bound = server.servers[0].sockets[0].getsockname()
            shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            names = ", ".join(f"{name} {folder}" for name, folder in projects)
            label = "project" if len(projects) == 1 else "projects"
            announce.write(f"liveforge gateway on http://{shown}:{bound[1]}/ ({label} {names})\n")
            announce.flush()
        await task
    finally:
        for extra in extras:
            await extra.stop()
        await hub.stop()


def _settle() -> None:
    """Collect once, then leave what startup made (modules, the app) out of every later
    collection: the collector's full passes over it would stall every stream the gateway
    carries for tens of milliseconds."""
    freeze_own()


def _projects(projects: list[tuple[str, Path]], mode: str) -> tuple[Hub, list[Any]]:
    """The hub over every project, and each project's channel and scheduler."""
    from liveforge.config import load_config
    from liveforge.gateway.core import Gateway
    from liveforge.gateway.hub import Hub

    configs, bots = [load_config(folder) for _name, folder in projects], dict[str, str]()
    for (name, _folder), config in zip(projects, configs, strict=True):
        if config.gateway is not None and config.gateway.telegram is not None:
            _one_project_per_bot(bots, config.gateway.telegram.token_env, name)
    gateways, extras = [], []
    for (name, folder), config in zip(projects, configs, strict=True):
        settings = config.gateway or GatewaySettings()
        gateway = Gateway(
            folder,
            approval_timeout=settings.approval_timeout,
            busy=settings.busy,
            mode=mode,
            name=name,
            model=config.model,
        )
        gateways.append(gateway)
        extras += _extras(gateway, settings, config.schedule)
    return Hub(gateways), extras


def _one_project_per_bot(bots: dict[str, str], token_env: str, project: str) -> None:
    """Refuse two projects polling one Telegram bot (the Bot API lets one poller in)."""
    token = os.environ.get(token_env, "")
    if token and token in bots:
        raise ConfigError(
            f"projects {bots[token]} and {project} both use the Telegram bot in {token_env}; "
            "a bot can serve one project: give the other its own bot and token_env in "
            "[tool.liveforge.gateway.telegram], or remove its table",
            key="gateway.telegram.token_env",
        )
    bots[token] = project


def _extras(
    gateway: Gateway, settings: GatewaySettings, schedule: list[ScheduleEntry]
) -> list[Any]:
    """The project's channels (Telegram when configured and its token is set) and its
    scheduler, which delivers through them; a schedule delivering to a channel the project
    lacks is refused."""
    from liveforge.gateway.channels import Channels
    from liveforge.gateway.schedule import Scheduler
    from liveforge.gateway.telegram import TelegramChannel

    channels = Channels()
    if settings.telegram is not None:
        bot_token = os.environ.get(settings.telegram.token_env, "")
        if not bot_token:
            raise ConfigError(
                f"[gateway.telegram] is configured but {settings.telegram.token_env} is not "
                "set; export the bot token from @BotFather, or remove the table",
                key="gateway.telegram.token_env",
            )
        channels.add(TelegramChannel(gateway, settings.telegram, bot_token))
    for entry in schedule:
        try:
            channels.client_for(entry.deliver)
        except ValueError as exc:
            raise ConfigError(f"schedule {entry.name}: {exc}", key="schedule.deliver") from None
    return [channels, Scheduler(gateway, schedule, channels)] if schedule else [channels]
