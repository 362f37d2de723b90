"""Every method of CompactorClient against the real service."""

import json
import os
import unittest
import urllib.error

from service import ROOT, Service  # first: it finds the package

import compactor_client
from compactor_client import CompactorClient, CompactorHttpError

BIG = "\n".join("line %d: value %d" % (i, i * 7) for i in range(120))
MESSAGES = [
    {"role": "user", "content": "task"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}}],
    },
    {"role": "tool", "tool_call_id": "a", "content": BIG},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "b", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls -la"}'}}],
    },
    {"role": "tool", "tool_call_id": "b", "content": "done"},
]


class ClientAgainstTheService(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.service = Service({"COMPACTOR_API_KEYS": "py-key-0123456789ab"})
        cls.client = CompactorClient(cls.service.url + "/", api_key="py-key-0123456789ab", timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.service.stop()

    def test_health(self):
        self.assertEqual(self.client.health(), {"status": "ready"})
        self.assertEqual(self.client.health("live"), {"status": "ok"})
        self.assertEqual(CompactorClient(self.service.url).health(), {"status": "ready"}, "health needs no key")
        with self.assertRaises(ValueError):
            self.client.health("nope")

    def test_tokens_and_validate(self):
        counted = self.client.tokens(messages=MESSAGES)
        self.assertEqual(counted["format"], "openai-chat")
        self.assertGreater(counted["total"], 100)
        self.assertTrue(self.client.validate({"messages": MESSAGES})["valid"])
        broken = self.client.validate(messages=[{"role": "tool", "tool_call_id": "zz", "content": "orphan"}], format="openai-chat")
        self.assertFalse(broken["valid"])

    def test_compact_artifact_expand(self):
        compacted = self.client.compact({"messages": MESSAGES}, keep_tool_uses=1)
        self.assertTrue(compacted["applied"])
        self.assertLess(compacted["tokens"]["after"], compacted["tokens"]["before"])
        artifact = self.client.artifact(compacted["artifacts"][0]["id"])
        self.assertEqual(artifact["content"], MESSAGES[2])
        expanded = self.client.expand(messages=compacted["messages"])
        self.assertEqual(expanded["messages"], MESSAGES)

    def test_window_summarize_fit(self):
        windowed = self.client.window(messages=MESSAGES, keep={"runs": 1})
        self.assertEqual(windowed["format"], "openai-chat")
        summarized = self.client.summarize(messages=MESSAGES, keep={"messages": 2})
        self.assertEqual(summarized["format"], "openai-chat")
        fitted = self.client.fit(messages=MESSAGES, target_tokens=100, policy="tokens")
        self.assertTrue(fitted["applied"])
        self.assertLessEqual(fitted["tokens"]["after"], fitted["tokens"]["before"])
        self.assertIn("stages", fitted)

    def test_fit_prepares_and_prepared_reads_it(self):
        history = [{"role": "user", "content": "task"}]
        for i in range(8):
            history.append({"role": "assistant", "content": "step %d: %s" % (i, "read the file and checked it. " * 10)})
            history.append({"role": "user", "content": "and then %d: %s" % (i, "look at the next module. " * 10)})
        fitted = self.client.fit(
            messages=history,
            target_tokens=8000,
            policy="tokens",
            summarize={"keep": {"messages": 4}},
            prepare={"enabled": True, "at": {"fraction": 0.05}},
        )
        self.assertFalse(fitted["applied"])
        prepared = fitted["prepared"]
        self.assertIn(prepared["state"], ("started", "running", "ready"))
        view = self.client.prepared(prepared["id"])
        self.assertEqual(view["id"], prepared["id"])
        self.assertEqual(view["covers"], prepared["covers"])
        with self.assertRaises(CompactorHttpError) as missing:
            self.client.prepared("art_0123456789abcdef01234567")
        self.assertEqual(missing.exception.problem["code"], "CMP_ERR_PREPARED_NOT_FOUND")

    def test_errors_carry_the_problem_document(self):
        with self.assertRaises(CompactorHttpError) as missing:
            self.client.artifact("art_0123456789abcdef01234567")
        self.assertEqual(missing.exception.status, 404)
        self.assertEqual(missing.exception.problem["code"], "CMP_ERR_ARTIFACT_NOT_FOUND")
        self.assertIn("CMP_ERR_ARTIFACT_NOT_FOUND", str(missing.exception))
        with self.assertRaises(CompactorHttpError) as denied:
            CompactorClient(self.service.url).tokens(messages=MESSAGES)
        self.assertEqual(denied.exception.status, 401)
        with self.assertRaises(CompactorHttpError) as bad:
            self.client.fit(messages=MESSAGES)
        self.assertEqual(bad.exception.status, 400)

    def test_a_service_that_is_gone(self):
        with self.assertRaises(urllib.error.URLError):
            CompactorClient("http://127.0.0.1:9", timeout=2).health()


class Installed(unittest.TestCase):
    @unittest.skipUnless(os.environ.get("COMPACTOR_CLIENT_INSTALLED"), "run-tests.sh tests the installed package")
    def test_the_installed_package_is_the_one_tested(self):
        self.assertIn("site-packages", compactor_client.__file__)
        self.assertEqual(compactor_client.__version__, "0.1.0")


class TypesFollowTheOpenApiDocument(unittest.TestCase):
    def test_typed_fields_exist_in_the_schemas(self):
        from compactor_client import types

        with open(os.path.join(ROOT, "openapi", "openapi.json"), encoding="utf-8") as f:
            schemas = json.load(f)["components"]["schemas"]
        pairs = {
            "Problem": "Problem",
            "HealthStatus": "HealthStatus",
            "TokensReport": "TokensReport",
            "ArtifactRef": "ArtifactRef",
            "StrategyResponse": "CompactResponse",
            "FitResponse": "FitResponse",
            "ExpandResponse": "ExpandResponse",
            "Artifact": "Artifact",
            "TokensResponse": "TokensResponse",
            "ValidateResponse": "ValidateResponse",
        }
        for name, schema in pairs.items():
            fields = set(getattr(types, name).__annotations__)
            documented = set(schemas[schema]["properties"])
            self.assertLessEqual(fields, documented, "%s has fields %s not in %s" % (name, fields - documented, schema))


if __name__ == "__main__":
    unittest.main()
