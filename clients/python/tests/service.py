"""Starts the real service (``node dist/server.js``, memory store, a free port) for the tests."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Dict, Optional

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

# The installed package when there is one (run-tests.sh installs it), else the source beside us.
try:
    import compactor_client  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    def __init__(self, env: Optional[Dict[str, str]] = None):
        server = os.path.join(ROOT, "dist", "server.js")
        if not os.path.exists(server):
            raise RuntimeError("dist/server.js is missing: run `npm run build` in %s first" % ROOT)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        child_env = dict(os.environ)
        child_env.update(
            {"COMPACTOR_STORE_URL": "memory:", "HOST": "127.0.0.1", "PORT": str(self.port), "LOG_LEVEL": "fatal"}
        )
        child_env.update(env or {})
        self.process = subprocess.Popen(["node", server], cwd=ROOT, env=child_env, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("the service exited with %s" % self.process.returncode)
            try:
                with urllib.request.urlopen(self.url + "/health/ready", timeout=1) as res:
                    if json.load(res).get("status") == "ready":
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the service was not ready in 20 s")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
