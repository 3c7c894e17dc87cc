"""Can a client reach its model? One TCP connection to the endpoint (or to the proxy its environment
sends it through), before `agent run` starts the client: the clients retry an unreachable model for
minutes (Claude Code 3 min, Gemini CLI ~5, Codex CLI without end), and say why only at the end."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

TIMEOUT_S = 5.0
PORTS = {"http": 80, "https": 443}


def via(url: str, env: dict[str, str]) -> str:
    """Where a connection to `url` goes first with this environment: the proxy it names, or `url`."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if _bypassed(host, _var(env, "no_proxy")):
        return url
    return _var(env, f"{parts.scheme}_proxy") or _var(env, "all_proxy") or url


def problem(url: str, env: dict[str, str], timeout_s: float = TIMEOUT_S) -> str | None:
    """Why no connection to `url` (through its proxy) can be made; None when one can."""
    target = via(url, env)
    parts = urlsplit(target if "://" in target else f"http://{target}")
    host, port = parts.hostname, parts.port or PORTS.get(parts.scheme)
    if not host or port is None:
        return None  # a form we do not read: the client is left to try
    hop = "" if target == url else f" (through the proxy {target})"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except socket.gaierror as e:
        return f"{host} does not resolve ({e.strerror or e}){hop}"
    except TimeoutError:
        return f"no answer within {timeout_s:g} s{hop}"
    except OSError as e:
        return f"{e.strerror or e}{hop}"


def _var(env: dict[str, str], name: str) -> str:
    return env.get(name) or env.get(name.upper()) or ""


def _bypassed(host: str, no_proxy: str) -> bool:
    entries = [e.strip().lower().lstrip(".") for e in no_proxy.split(",")]
    return any(e == "*" or (e and (host == e or host.endswith("." + e))) for e in entries)
