"""A client that cannot reach its model is not started (issue 32 item 3): the clients retry for minutes
(Claude Code 2.1.328 took 185 s to give up on a refused connection, Codex CLI 0.169 retried past 400 s,
Gemini CLI 0.61 ~280 s). `agent run` opens one connection to the endpoint first — through the proxy the
environment names, unless NO_PROXY holds the host — and refuses at once, with the cause and the retry."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from fixtures import codexrun
from fixtures.agentworld import World, agent_world

from spark_git.core import reach

BOUND_S = 30.0  # the clients' own give-up is minutes; this refusal is one connection


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_a_listening_endpoint_is_open_and_a_closed_one_names_why() -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        assert reach.problem(f"http://127.0.0.1:{srv.getsockname()[1]}/v1", {}) is None
    url = closed_url()
    why = reach.problem(url, {})
    assert why is not None and "refused" in why.lower(), why


def test_the_connection_goes_through_the_proxy_unless_no_proxy_holds_the_host() -> None:
    env = {"HTTPS_PROXY": "http://proxy.example:3128", "no_proxy": "localhost,.internal"}
    assert reach.via("https://api.anthropic.com", env) == "http://proxy.example:3128"
    assert reach.via("https://models.internal/v1", env) == "https://models.internal/v1"
    assert reach.via("http://localhost:8080", env) == "http://localhost:8080"
    dead = closed_url()
    why = reach.problem("https://api.anthropic.com", {"HTTPS_PROXY": dead})
    assert why is not None and "refused" in why.lower() and f"through the proxy {dead}" in why, why


@pytest.fixture
def world() -> Iterator[World]:
    yield from agent_world({"app.py": "x = 1\n"}, 'protocol = "light"\n', ("claude", "codex", "gemini"))


def test_agent_run_refuses_at_once_a_client_whose_model_is_unreachable(world: World) -> None:
    w = world
    w.step("start", "t1", "--agents", "a")
    url = closed_url()
    w.env.update({"ANTHROPIC_BASE_URL": url, "GOOGLE_GEMINI_BASE_URL": url})
    runs = w.task / "agents" / "a" / "runs"
    for client, args in (("claude", []), ("gemini", []), ("codex", codexrun.server_args(url))):
        t0 = time.monotonic()
        r = w.spark("agent", "run", "t1", "a", "--client", client, "--", *args)
        took = time.monotonic() - t0
        out = json.loads(r.stdout)
        assert r.returncode == 3, (client, r.stdout, r.stderr)
        assert took < BOUND_S, (client, took)
        error = out["data"]["error"]
        assert f"cannot reach its model at {url}" in error and "refused" in error.lower() and "was not started" in error, out
        assert out["next"] == [f"spark-git agent run t1 a --client {client}" + (" -- " + " ".join(_quoted(args)) if args else "")], out
        assert not runs.exists() or list(runs.iterdir()) == [], (client, list(runs.iterdir()))  # nothing was started
        assert not (w.task / "agents" / "a" / "run.json").exists()


def _quoted(args: list[str]) -> list[str]:
    import shlex

    return [shlex.quote(a) for a in args]
