// `npm run capture:clients [claude-code|codex|opencode …]`: the newest published Claude Code, Codex
// CLI and opencode (`npm view <pkg> version`), each installed into the clients cache
// ($COMPACTOR_CLIENTS_CACHE, default ~/.cache/compactor-clients) and run offline against the fake
// provider, every request body it sent posted to every endpoint as test/system/real-clients.test.ts
// does (the same code: test/support/clients.ts), then a table per client, the shapes it sent, and
// how they differ from what the pinned version sends. Exits 1 when a run or any post fails.
// Runs the repository's TypeScript through the test loader (package.json: "capture:clients").
// Nothing is written to the repository: captures live in memory.
import {
  CLIENT_NAMES,
  CLIENTS,
  captureAndCheck,
  captureClient,
  diffShapes,
  failureLines,
  installClient,
  latestVersion,
  resultTable,
  shapesOf,
  startCompactor,
} from '../test/support/clients.ts';

const names = process.argv.slice(2);
for (const name of names) {
  if (!CLIENT_NAMES.includes(name)) {
    console.error(`unknown client ${name}: one of ${CLIENT_NAMES.join(', ')}`);
    process.exit(2);
  }
}

/** Prints a shapes object, one field a line. */
function printShapes(shapes) {
  for (const [field, values] of Object.entries(shapes)) console.log(`  ${field.padEnd(9)} ${values.join(', ') || '-'}`);
}

const compactor = await startCompactor();
const summary = [];
let failed = false;
try {
  for (const name of names.length > 0 ? names : CLIENT_NAMES) {
    const spec = CLIENTS[name];
    const newest = await latestVersion(name);
    console.log(`\n## ${name} ${newest} (${spec.pkg}; pinned ${spec.pinned})`);
    await installClient(name, newest);
    const report = await captureAndCheck(name, compactor.base, { version: newest });
    const { run } = report;
    console.log(
      `run: exit ${run.exitCode}${run.timedOut ? ' (timed out)' : ''} in ${(run.durationMs / 1000).toFixed(1)} s; ` +
        `${report.requests.length} model requests, ${report.all.length} requests in all`,
    );
    const runFailed = run.exitCode !== 0 || report.requests.length === 0;
    if (runFailed) console.log(`stderr (last lines):\n${run.stderr.split('\n').slice(-15).join('\n')}`);
    console.log(
      `\n${resultTable(report)}\n(ok*: it reduced the history; a number: the HTTP status; FAIL: 200 with a failed check)`,
    );
    const failures = failureLines(report);
    for (const line of failures) console.log(`  FAIL ${line}`);
    console.log('\nshapes sent:');
    printShapes(report.shapes);
    if (newest === spec.pinned) console.log(`\nshapes against the pinned version: the newest is the pinned version`);
    else {
      await installClient(name, spec.pinned);
      const pinned = await captureClient(name, { version: spec.pinned });
      const changes = diffShapes(shapesOf(pinned.all), report.shapes);
      console.log(`\nshapes against the pinned version ${spec.pinned}: ${changes.length === 0 ? 'no change' : ''}`);
      for (const change of changes) {
        for (const value of change.added) console.log(`  + ${change.field}: ${value}`);
        for (const value of change.removed) console.log(`  - ${change.field}: ${value}`);
      }
    }
    const passed = report.results.filter((r) => r.ok).length;
    summary.push(`${name} ${newest}: ${runFailed ? 'run failed, ' : ''}${passed}/${report.results.length} checks passed`);
    failed ||= runFailed || failures.length > 0;
  }
} finally {
  await compactor.close();
}
console.log(`\n## summary\n${summary.join('\n')}`);
process.exit(failed ? 1 : 0);
