"""What a headless client said, read from its machine-readable output (one JSON event a line):
its final message, the tokens and cost it reports, its last tool call. The three clients' event
shapes do not overlap, so one reader serves them all (`claude -p --output-format stream-json`,
`codex exec --json`, `gemini -p --output-format stream-json`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Heard:
    final: str = ""  # the last assistant message (the run's answer)
    tokens: int | None = None  # input + output, when the client reports them
    cost_usd: float | None = None
    last_tool: str = ""  # the last tool call, for the progress line
    texts: list[str] = field(default_factory=list)  # every assistant message, in order


def read(stdout: str) -> Heard:
    h = Heard()
    gemini_delta: list[str] = []
    for line in stdout.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            _event(h, ev, gemini_delta)
    if gemini_delta and not h.final:
        h.final = "".join(gemini_delta)
    return h


def _event(h: Heard, ev: dict[str, Any], gemini_delta: list[str]) -> None:
    kind = ev.get("type")
    if kind == "result":  # Claude's and Gemini's closing event
        if isinstance(ev.get("result"), str):
            h.final = ev["result"]
        _usage(h, ev.get("usage") or ev.get("stats"))
        if isinstance(ev.get("total_cost_usd"), int | float):
            h.cost_usd = float(ev["total_cost_usd"])
    elif kind == "assistant":  # Claude
        for c in (ev.get("message") or {}).get("content") or []:
            if isinstance(c, dict) and c.get("type") == "tool_use":
                h.last_tool = _tool(c.get("name"), c.get("input"))
            elif isinstance(c, dict) and c.get("type") == "text" and c.get("text"):
                h.texts.append(c["text"])
    elif kind in ("item.completed", "item.started"):  # Codex
        item = ev.get("item") or {}
        if item.get("type") == "agent_message" and kind == "item.completed":
            h.final = str(item.get("text") or "")
            h.texts.append(h.final)
        elif item.get("type") == "command_execution":
            h.last_tool = _tool("shell", {"command": item.get("command")})
    elif kind == "turn.completed":  # Codex
        _usage(h, ev.get("usage"))
    elif kind == "message" and ev.get("role") == "assistant":  # Gemini, streamed in deltas
        gemini_delta.append(str(ev.get("content") or ""))
    elif kind == "tool_use":  # Gemini
        h.last_tool = _tool(ev.get("tool_name"), ev.get("parameters"))


def _usage(h: Heard, u: object) -> None:
    if not isinstance(u, dict):
        return
    if isinstance(u.get("total_tokens"), int):
        h.tokens = u["total_tokens"]
        return
    parts = [u.get(k) for k in ("input_tokens", "output_tokens")]
    if all(isinstance(p, int) for p in parts):
        h.tokens = sum(p for p in parts if isinstance(p, int))


def _tool(name: object, args: object) -> str:
    arg = ""
    if isinstance(args, dict):
        arg = str(args.get("command") or args.get("file_path") or args.get("path") or "")
    return f"{name} {arg}".strip()[:80]


def output_json(text: str) -> dict[str, Any] | None:
    """The final message as a JSON object: as it is, or inside a ``` fence, or from its first `{`
    to its last `}` (models often put a sentence around it)."""
    s = text.strip()
    if s.startswith("```"):
        s = s.strip("`").removeprefix("json").strip()
    for cand in (s, s[s.find("{"): s.rfind("}") + 1] if "{" in s else ""):
        try:
            data = json.loads(cand)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None
