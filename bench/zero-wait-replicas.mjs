/**
 * Zero-wait with two replicas (issue 22's second proof): the replay of bench/zero-wait.mjs (same
 * runs, agent, fake summarizer, bill; its header describes them) against two service processes
 * (`node dist/server.js`) sharing the real Redis (ZW_REDIS_URL, default redis://127.0.0.1:6379:
 * the artifacts under COMPACTOR_STORE_PREFIX, the prepared summaries' BullMQ jobs and per-key index
 * under COMPACTOR_JOBS_PREFIX, both `zw-replicas-<random>…`, every key under them deleted at the
 * end), the same artifact secret, fit requests alternating between them (call i goes to replica
 * i mod 2, its `/v1/validate` too).
 *
 * 1. The replay, preparing on and off, at the service's defaults. Besides bench/zero-wait.mjs's
 *    table: per run, the prepared ranges (the distinct ids fits reported), the summarizer calls
 *    the fake answered and which replica made each (the fake sees the key each replica sends it,
 *    `replica-0` or `replica-1`), how many prompts it was sent more than once (the same range
 *    summarized twice), each range's usage as `GET /v1/prepared/{id}` shows it, and how many
 *    splices happened on the other replica than the one whose fit asked for the range.
 * 2. The kill: one run (ZW_KILL_RUN, a regex; default the first) replayed with preparing on, the
 *    fake taking ZW_KILL_SUMMARIZER_MS (5000) per call. Before each fit, once a summarizer call
 *    is in flight (a prepared job: no fit is in flight then), the replica making it is killed
 *    (SIGKILL) and every later request goes to the survivor, as a load balancer would send them.
 *    Reported: how far into its call the replica died, when the survivor started and finished the
 *    same prompt (its stalled check takes the job over once the dead one's lock expires:
 *    COMPACTOR_JOBS_LOCK_MS: once at the service's 20 s, once at 5 s; ZW_KILL_LOCK_MS lists them),
 *    the fit that spliced that range and what it billed, and the replay's usual figures. The
 *    killed attempt's call, answered to no one, is in the fake's count and in the bill (a provider
 *    would likely bill it).
 *
 * Usage: npm run build && node bench/zero-wait-replicas.mjs
 * Env: bench/zero-wait.mjs's (ZW_RUNS, ZW_FILES, ZW_MAX_CALLS, ZW_AGENT_MS, ZW_SUMMARIZER_MS, …),
 *      ZW_REDIS_URL, ZW_KILL (0: skip the kill), ZW_KILL_RUN, ZW_KILL_SUMMARIZER_MS, ZW_KILL_LOCK_MS
 *      (comma list; default 20000,5000),
 *      ZW_OUT (default bench/out/zero-wait-replicas-<commit>.json).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startFakeLlm, summarizerEnv } from './lib/fake-llm.mjs';
import { runMeta } from './lib/meta.mjs';
import { startServer } from './lib/servers.mjs';
import { keyOf, MODES, replayOne, settingsFromEnv, WINDOW } from './lib/zero-wait-replay.mjs';
import { killTable, rangeTable, report } from './lib/zero-wait-table.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const REDIS_URL = process.env.ZW_REDIS_URL ?? 'redis://127.0.0.1:6379';
const KILL = process.env.ZW_KILL !== '0';
const KILL_SUMMARIZER_MS = Number(process.env.ZW_KILL_SUMMARIZER_MS ?? 5000);
/** The lock durations the kill runs with, one scenario each: the service's default, and a short one. */
const KILL_LOCKS_MS = (process.env.ZW_KILL_LOCK_MS ?? '20000,5000').split(',').map(Number);
const PREFIX = `zw-replicas-${randomBytes(4).toString('hex')}`;
const T0 = performance.now();
const log = (...args) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1)}s]`, ...args);
const settings = settingsFromEnv();

/** Deletes every key under PREFIX (this run's, and only those). */
async function dropPrefix() {
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  let n = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) n += await client.del(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
  return n;
}

/** Two replicas on the shared Redis under `prefix`, each sending the fake its own key (`replica-<i>`). */
async function startReplicas(fake, prefix, env = {}) {
  const keys = settings.runs.flatMap((r) => MODES.map((m) => keyOf(r.name, m)));
  const secret = 'zero-wait-benchmark-fixed-artifact-secret-0001';
  return Promise.all(
    [0, 1].map((i) =>
      startServer('compactor', {
        env: {
          COMPACTOR_STORE_URL: REDIS_URL,
          COMPACTOR_STORE_PREFIX: `${prefix}.store`,
          COMPACTOR_JOBS_PREFIX: prefix,
          ...summarizerEnv(fake, { keys, secret, apiKey: `replica-${i}` }),
          ...env,
        },
      }),
    ),
  );
}

/** Per run: what each prepared range cost, and where the summaries were made and spliced. */
function ranges(r) {
  const byPrompt = new Map();
  const byCaller = {};
  for (const s of r.summarizer_records) {
    byPrompt.set(s.prompt_hash, (byPrompt.get(s.prompt_hash) ?? 0) + 1);
    byCaller[s.caller] = (byCaller[s.caller] ?? 0) + 1;
  }
  const askedBy = new Map();
  for (const f of r.trace) if (f.id && !askedBy.has(f.id)) askedBy.set(f.id, f.base);
  const spliced = r.trace.filter((f) => f.prepared === 'spliced');
  const views = Object.values(r.prepared_views);
  return {
    run: r.run,
    mode: r.mode,
    ranges: views.length,
    summarizer_calls: r.summarizer_calls,
    by_caller: byCaller,
    prompts_sent_twice: [...byPrompt.values()].filter((n) => n > 1).length,
    view_calls: views.map((v) => v.calls ?? 0),
    splices: spliced.length,
    spliced_elsewhere: spliced.filter((f) => askedBy.get(f.id) !== f.base).length,
    on_path_fits: r.on_path_fits,
  };
}

/** The kill scenario on one run: returns the replay's result and what became of the killed job. */
async function killScenario(run, fake, lockMs) {
  const servers = await startReplicas(fake, `${PREFIX}-kill-${lockMs}`, { COMPACTOR_JOBS_LOCK_MS: String(lockMs) });
  const alive = [0, 1];
  let kill;
  const beforeCall = async (call) => {
    const inFlight = kill ? undefined : fake.requests.find((r) => !Number.isFinite(r.end));
    if (!inFlight) return;
    const victim = Number(inFlight.caller.replace('replica-', ''));
    const at = performance.now();
    process.kill(servers[victim].pid, 'SIGKILL');
    kill = { victim, at, into_call_ms: Math.round(at - inFlight.start), prompt_hash: inFlight.prompt_hash, before_fit: call };
    await servers[victim].stop();
    alive.splice(alive.indexOf(victim), 1);
    log(`killed replica-${victim} ${kill.into_call_ms} ms into its summarizer call, before fit call ${call}`);
  };
  const route = (call) => servers[alive[call % alive.length]].base;
  try {
    const r = await replayOne({
      route,
      alive: () => servers[alive[0]].base,
      fake,
      run,
      mode: 'on',
      agentMs: settings.agentMs,
      prepareOn: settings.prepareOn,
      beforeCall,
    });
    if (!kill) return { lock_ms: lockMs, result: r, kill: null };
    const id = r.trace
      .slice(0, kill.before_fit)
      .reverse()
      .find((f) => f.id)?.id;
    const calls = r.summarizer_records
      .filter((s) => s.prompt_hash === kill.prompt_hash)
      .map((s) => ({
        caller: s.caller,
        delivered: s.delivered,
        start_s: (s.start - kill.at) / 1000,
        end_s: (s.end - kill.at) / 1000,
      }));
    const splice = r.trace.find((f) => f.id === id && f.prepared === 'spliced');
    return {
      lock_ms: lockMs,
      result: r,
      kill: {
        ...kill,
        at: undefined,
        id,
        calls,
        splice: splice
          ? { call: splice.call, by_survivor: splice.base === servers[alive[0]].base, billed_calls: splice.billed_prepared_calls }
          : null,
        view: r.prepared_views[id] ?? null,
      },
    };
  } finally {
    for (const i of alive) await servers[i].stop();
  }
}

async function main() {
  const { runs, capNote, maxCalls, agentMs, summarizerMs, prepareOn } = settings;
  for (const note of capNote) log(note);
  const meta = { ...runMeta(), replicas: 2, redis: REDIS_URL, prefix: PREFIX, window: WINDOW, agent_ms: agentMs };
  Object.assign(meta, { summarizer_ms: summarizerMs, max_calls: maxCalls, prepare_on: prepareOn });
  const results = [];
  const kills = [];
  try {
    const fake = await startFakeLlm({ delayMs: summarizerMs });
    const servers = await startReplicas(fake, PREFIX);
    try {
      for (const run of runs) {
        for (const mode of MODES) {
          const route = (call) => servers[call % servers.length].base;
          const r = await replayOne({ route, fake, run, mode, agentMs, prepareOn });
          log(`${run.name} prepare ${mode}: ${r.fits} fits, ${r.slow} > 1 s, ${r.summarizer_calls} summarizer calls`);
          results.push(r);
        }
      }
    } finally {
      for (const s of servers) await s.stop();
      await fake.stop();
    }
    if (KILL) {
      const run = process.env.ZW_KILL_RUN ? runs.find((r) => new RegExp(process.env.ZW_KILL_RUN).test(r.name)) : runs[0];
      for (const lockMs of KILL_LOCKS_MS) {
        const slow = await startFakeLlm({ delayMs: KILL_SUMMARIZER_MS });
        try {
          kills.push(await killScenario(run, slow, lockMs));
        } finally {
          await slow.stop();
        }
      }
    }
  } finally {
    log(`deleted ${await dropPrefix()} Redis keys under ${PREFIX}`);
  }
  const { table, totals, goals } = report(results, MODES);
  const perRange = results.map(ranges);
  goals.one_call_per_range = perRange
    .filter((p) => p.mode === 'on')
    .every((p) => p.summarizer_calls === p.ranges && p.prompts_sent_twice === 0 && p.view_calls.every((c) => c === 1));
  const offOf = (kill) => results.find((r) => r.run === kill.result.run && r.mode === 'off');
  const killTables = kills.length ? killTable(kills, offOf, KILL_SUMMARIZER_MS) : '';
  console.log(
    `#### Zero-wait replay on two replicas (Redis), commit ${meta.commit} (${meta.date})\n\nwindow ${WINDOW}, summarizer ${summarizerMs} ms per call, agent ${agentMs} ms per model call, requests alternating between the replicas${capNote.length ? `; ${capNote.join('; ')}` : ''}.\n\n${table}\n\n${rangeTable(perRange)}\n\n${killTables}\n\ngoals: ${JSON.stringify(goals)}`,
  );
  meta.seconds = +((performance.now() - T0) / 1000).toFixed(1);
  const path = process.env.ZW_OUT ?? `${ROOT}bench/out/zero-wait-replicas-${meta.commit}.json`;
  mkdirSync(`${ROOT}bench/out`, { recursive: true });
  writeFileSync(path, `${JSON.stringify({ meta, totals, goals, ranges: perRange, kills, results }, null, 1)}\n`);
  log(`wrote ${path}`);
}

await main();
