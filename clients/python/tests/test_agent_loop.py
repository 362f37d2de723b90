"""The example agent loop (examples/agent_loop.py) against the real service and a fake
OpenAI-compatible model speaking real HTTP: the model sees the history fit returned, the agent
finishes, and each fit call gets the provider's previous usage back with messages_covered."""

import json
import os
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from service import Service  # first: it finds the package

from compactor_client import CompactorClient

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import agent_loop  # noqa: E402

FILES = ["src/app.py", "src/models.py", "src/views.py", "src/forms.py", "src/utils.py", "tests/test_app.py"]


def source(name: str) -> str:
    """About 3,000 tokens of plausible Python, different per file."""
    return "\n".join(
        "def %s_%d(value, scale=%d):\n    return value * scale + %d  # %s line %d" % (name.replace("/", "_")[:-3], i, i % 7, i, name, i)
        for i in range(160)
    )


class FakeModel:
    """Asks to read each file in turn, then answers. Records every request it gets."""

    def __init__(self) -> None:
        self.requests = []
        self.usages = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.requests.append(body)
                step = len(fake.requests) - 1
                prompt = sum(len(json.dumps(m)) for m in body["messages"]) // 4
                cached = fake.usages[-1]["prompt_tokens"] if fake.usages else 0
                if step < len(FILES):
                    call = {"id": "call_%d" % step, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": FILES[step]})}}
                    message = {"role": "assistant", "content": None, "tool_calls": [call]}
                else:
                    message = {"role": "assistant", "content": "Done: the app scales values in six modules."}
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": 24,
                    "total_tokens": prompt + 24,
                    "prompt_tokens_details": {"cached_tokens": min(cached, prompt)},
                }
                fake.usages.append(usage)
                out = json.dumps({"id": "chatcmpl-%d" % step, "object": "chat.completion", "model": body["model"],
                                  "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if step < len(FILES) else "stop"}],
                                  "usage": usage}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/v1" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class RecordingClient(CompactorClient):
    """Records every fit request and answer."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.fits = []

    def fit(self, request=None, **fields):
        answer = super().fit(request, **fields)
        self.fits.append((json.loads(json.dumps(request)), answer))
        return answer


class AgentLoopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.service = Service()
        cls.model = FakeModel()
        cls.root = tempfile.mkdtemp()
        for name in FILES:
            os.makedirs(os.path.join(cls.root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(cls.root, name), "w") as f:
                f.write(source(name))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.model.stop()
        cls.service.stop()

    def test_the_loop(self) -> None:
        compactor = RecordingClient(self.service.url)
        result = agent_loop.run_agent("Explain what this project does.", self.model.url, compactor, self.root, context_window=16000)

        # The agent finished its task.
        self.assertEqual(result["answer"], "Done: the app scales values in six modules.")
        self.assertEqual(len(self.model.requests), len(FILES) + 1)
        self.assertEqual(len(compactor.fits), len(FILES) + 1)

        # The model received exactly the history fit returned, every time; and fit reduced it.
        for (request, answer), sent in zip(compactor.fits, self.model.requests):
            self.assertEqual(sent["messages"], answer["messages"])
        self.assertTrue(any(answer["applied"] for _, answer in compactor.fits), "fit reduced the history at least once")
        reduced = [a for _, a in compactor.fits if a["applied"]]
        self.assertLess(reduced[0]["tokens"]["after"], reduced[0]["tokens"]["before"])

        # Each fit after the first got the provider's previous usage, with the messages it covered.
        self.assertNotIn("usage", compactor.fits[0][0])
        for k in range(1, len(compactor.fits)):
            usage = compactor.fits[k][0]["usage"]
            expected = dict(self.model.usages[k - 1])
            self.assertEqual({key: usage[key] for key in expected}, expected)
            self.assertEqual(usage["messages_covered"], len(self.model.requests[k - 1]["messages"]) + 1)
            # The covered messages are the prefix fit was given: what the model saw, then its reply.
            self.assertEqual(compactor.fits[k][0]["messages"][: len(self.model.requests[k - 1]["messages"])], self.model.requests[k - 1]["messages"])


if __name__ == "__main__":
    unittest.main()
