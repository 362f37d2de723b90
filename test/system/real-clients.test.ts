import t from 'tap';
import { build } from '../support/app.js';
import {
  CLIENT_NAMES,
  CLIENTS,
  type ClientReport,
  captureAndCheck,
  ENDPOINTS,
  installClient,
  registryReachable,
} from '../support/clients.js';
import { listen } from '../support/net.js';
import { asObject, countToolResults, historyOf } from '../support/provider/parse.js';
import type { RecordedRequest } from '../support/provider/types.js';

/**
 * The agents people run, at pinned versions, as they send: Claude Code, Codex CLI and opencode
 * are installed from npm into a cache (test/support/clients.ts), each runs offline against the
 * fake provider through three shell calls with large outputs, and every model request it sent is
 * posted to every endpoint of the real app on a listening port. Each history must be accepted
 * (200), valid, every message the endpoint kept must come back byte-identical, and `/v1/expand`
 * must turn compact's and fit's output back into the captured history. The captures live only in
 * memory: Claude Code's prompts are Anthropic's and are never written to the repository.
 */

/** The default scenario's shell calls before its final answer. */
const STEPS = 3;

const app = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
const { base } = await listen(app);

/** Whether a request carried the key the client was given (compared, never printed). */
function carriesKey(r: RecordedRequest, key: string): boolean {
  const headers = [r.headers['x-api-key'], r.headers.authorization].flat();
  return headers.some((value) => value === key || value === `Bearer ${key}`);
}

function toolResults(r: RecordedRequest | undefined): number {
  const body = asObject(r?.json);
  return r?.wire && body ? countToolResults(r.wire, historyOf(r.wire, body)) : 0;
}

for (const name of CLIENT_NAMES) {
  const spec = CLIENTS[name];
  t.test(`${name}@${spec.pinned}`, async (t) => {
    try {
      await installClient(name);
    } catch (error) {
      const registry = await registryReachable();
      // Only a missing registry is a reason to skip; any other install failure is a failure.
      if (registry.ok) throw error;
      t.pass(`${name} is installed`, {
        skip: `${spec.pkg}@${spec.pinned} cannot be installed: the npm registry is unreachable (${registry.reason})`,
      });
      return;
    }
    const report: ClientReport = await captureAndCheck(name, base);
    const { run, requests } = report;
    t.equal(run.timedOut, false, `${name} finished before its timeout`);
    t.equal(run.exitCode, 0, `${name} exits 0`, { stderr: run.stderr.slice(-2000) });
    t.ok(requests.length >= STEPS + 1, `${name} made a model request per step (${requests.length})`);
    t.ok(toolResults(requests.at(-1)) >= STEPS, `${name}'s last request holds the results of ${STEPS} tool calls`);
    t.ok(
      requests.every((r) => carriesKey(r, run.apiKey)),
      `${name}: every request carried the key it was given`,
    );
    for (const result of report.results) {
      t.same(result.problems, [], result.label, { status: result.status });
    }
    for (const endpoint of ENDPOINTS.filter((e) => e !== 'tokens' && e !== 'validate')) {
      const applied = report.results.filter((r) => r.endpoint === endpoint && r.applied).length;
      // A history that every endpoint refused reduces nothing: that failure is reported above.
      if (report.results.some((r) => r.endpoint === endpoint && r.status === 200)) {
        t.ok(applied > 0, `${name}: /v1/${endpoint} reduced at least one of the captured histories`);
      }
    }
  });
}
