"""A plain tool-calling agent loop over an OpenAI-compatible Chat Completions endpoint, on the
standard library only, with Compactor's ``/v1/fit`` before every model call.

    python3 clients/python/examples/agent_loop.py --model-url http://127.0.0.1:9000/v1 \
        --compactor-url http://127.0.0.1:8080 [--api-key sk-…] [--model gpt-4o]

The loop keeps the history Compactor returns as its own (the provider caches the prompt it saw),
and passes the provider's last ``usage`` back with ``messages_covered``: how many leading messages
that usage covered, the reply included. The one tool, ``read_file``, reads files under ``--root``.
"""

import argparse
import json
import os
import urllib.request
from typing import Any, Callable, Dict, List, Optional

from compactor_client import CompactorClient

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the project.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "path relative to the project root"}},
                "required": ["path"],
            },
        },
    }
]


def read_file(root: str, path: str) -> str:
    """The tool: a file's text, or an error the model can read."""
    full = os.path.realpath(os.path.join(root, path))
    if not full.startswith(os.path.realpath(root) + os.sep):
        return "error: %s is outside the project" % path
    try:
        with open(full, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        return "error: %s" % e.strerror


def chat(model_url: str, api_key: str, body: Dict[str, Any]) -> Dict[str, Any]:
    """One Chat Completions call."""
    request = urllib.request.Request(
        model_url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer " + api_key},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as res:
        return json.load(res)


def run_agent(
    task: str,
    model_url: str,
    compactor: CompactorClient,
    root: str,
    model: str = "gpt-4o",
    api_key: str = "unused",
    context_window: Optional[int] = None,
    max_steps: int = 30,
    on_fit: Optional[Callable[[int, Dict[str, Any]], None]] = None,
) -> Dict[str, Any]:
    """Runs the loop until the model answers without a tool call; returns the answer and the history."""
    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent. Read files with read_file."},
        {"role": "user", "content": task},
    ]
    usage: Optional[Dict[str, Any]] = None
    for step in range(max_steps):
        request: Dict[str, Any] = {"format": "openai-chat", "model": model, "messages": messages, "target_fraction": 0.5}
        if context_window:
            request["context_window"] = context_window
        if usage is not None:
            request["usage"] = usage
        fitted = compactor.fit(request)
        if on_fit:
            on_fit(step, fitted)
        messages = list(fitted["messages"])
        reply = chat(model_url, api_key, {"model": model, "messages": messages, "tools": TOOLS})
        message = reply["choices"][0]["message"]
        messages.append(message)
        # The usage covers the prompt just sent and this reply.
        usage = dict(reply.get("usage") or {}, messages_covered=len(messages))
        calls = message.get("tool_calls") or []
        if not calls:
            return {"answer": message.get("content") or "", "messages": messages, "steps": step + 1}
        for call in calls:
            args = json.loads(call["function"]["arguments"] or "{}")
            out = read_file(root, args.get("path", "")) if call["function"]["name"] == "read_file" else "error: unknown tool"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": out})
    raise RuntimeError("no answer after %d steps" % max_steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-url", default=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"))
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "unused"))
    parser.add_argument("--model", default="gpt-4o")
    parser.add_argument("--compactor-url", default=os.environ.get("COMPACTOR_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--root", default=".")
    parser.add_argument("task", nargs="?", default="Read README.md and summarize what this project does.")
    a = parser.parse_args()

    def report(step: int, fitted: Dict[str, Any]) -> None:
        tokens = fitted["tokens"]
        verb = "reduced" if fitted["applied"] else "kept"
        print("step %d: fit %s the history (%d -> %d tokens)" % (step, verb, tokens["before"], tokens["after"]))

    result = run_agent(a.task, a.model_url, CompactorClient(a.compactor_url), a.root, a.model, a.api_key, on_fit=report)
    print(result["answer"])


if __name__ == "__main__":
    main()
