"""Retries honour retry-after on 429 and 503, within the deadline, against a tiny stdlib server."""

import ast
import json
import os
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import service  # noqa: F401  (first: it finds the package)

import compactor_client
from compactor_client import CompactorClient, CompactorHttpError


class Scripted(ThreadingHTTPServer):
    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.answers = []  # (status, retry_after or None, body or None)
        self.seen = []

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self):
        server = self.server
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        server.seen.append((self.command, self.path, json.loads(body) if body else None, self.headers.get("authorization")))
        status, retry_after, text = server.answers.pop(0) if server.answers else (200, None, None)
        if text is None:
            if status == 200:
                text = json.dumps({"total": 3, "format": "openai-chat"})
            else:
                text = json.dumps({"status": status, "code": "CMP_ERR_BUSY", "detail": "busy"})
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if retry_after is not None:
            self.send_header("retry-after", retry_after)
        self.end_headers()
        self.wfile.write(data)

    do_GET = _answer
    do_POST = _answer


class RetryAfter(unittest.TestCase):
    def setUp(self):
        self.server = Scripted()
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.hi = {"messages": [{"role": "user", "content": "hi"}]}

    def test_503_then_200_waits_what_retry_after_says(self):
        self.server.answers = [(503, "1", None)]
        started = time.monotonic()
        answer = CompactorClient(self.server.url, api_key="k").tokens(self.hi)
        self.assertEqual(answer["total"], 3)
        self.assertEqual(len(self.server.seen), 2)
        self.assertGreaterEqual(time.monotonic() - started, 0.95)
        self.assertEqual(self.server.seen[1][2], self.hi, "the same body again")
        self.assertEqual(self.server.seen[1][3], "Bearer k")

    def test_429_and_503_up_to_retries(self):
        waits = []
        self.server.answers = [(503, "2", None), (429, "3", None)]
        client = CompactorClient(self.server.url, sleep=waits.append)
        self.assertEqual(client.tokens(self.hi)["total"], 3)
        self.assertEqual(waits, [2.0, 3.0], "retries default 2, each after its retry-after")
        self.server.answers = [(503, "1", None)] * 3
        self.server.seen.clear()
        with self.assertRaises(CompactorHttpError) as raised:
            CompactorClient(self.server.url, sleep=lambda s: None).tokens(self.hi)
        self.assertEqual(len(self.server.seen), 3)
        self.assertEqual(raised.exception.retry_after_seconds, 1.0)
        self.assertEqual(raised.exception.problem["code"], "CMP_ERR_BUSY")

    def test_no_retry_without_retry_after_past_the_deadline_or_with_retries_0(self):
        for answers, client in [
            ([(503, None, None)], CompactorClient(self.server.url)),
            ([(500, "1", None)], CompactorClient(self.server.url)),
            ([(503, "30", None)], CompactorClient(self.server.url, timeout=2)),
            ([(429, "1", None)], CompactorClient(self.server.url, retries=0)),
        ]:
            self.server.answers = list(answers)
            self.server.seen.clear()
            with self.assertRaises(CompactorHttpError) as raised:
                client.fit(self.hi, target_tokens=10)
            self.assertEqual(raised.exception.status, answers[0][0])
            self.assertEqual(len(self.server.seen), 1)

    def test_a_body_that_is_not_json(self):
        self.server.answers = [(502, None, "<html>bad gateway</html>")]
        with self.assertRaises(CompactorHttpError) as raised:
            CompactorClient(self.server.url).window(self.hi)
        self.assertIsNone(raised.exception.problem)
        self.assertEqual(str(raised.exception), "HTTP 502")

    def test_health_returns_a_not_ready_503(self):
        self.server.answers = [(503, None, json.dumps({"status": "draining"}))]
        self.assertEqual(CompactorClient(self.server.url).health(), {"status": "draining"})
        self.assertEqual(self.server.seen[0][:2], ("GET", "/health/ready"))

    def test_artifact_ids_are_quoted(self):
        CompactorClient(self.server.url).artifact("a/b c")
        self.assertEqual(self.server.seen[0][:2], ("GET", "/v1/artifacts/a%2Fb%20c"))


class PythonCompatibility(unittest.TestCase):
    def test_the_package_parses_as_python_3_9(self):
        folder = os.path.dirname(compactor_client.__file__)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    ast.parse(f.read(), name, feature_version=(3, 9))


if __name__ == "__main__":
    unittest.main()
