import t from 'tap';
import { BYPASS_REASONS } from '../../src/proxy/bypass.js';
import { readDoc } from '../support/docs.js';

/** docs/proxy.md's table of bypass reasons is the code's list: every reason documented, nothing else. */
t.test('every bypass reason is documented in docs/proxy.md with what to do, and only those', async (t) => {
  const doc = readDoc('docs/proxy.md');
  const start = doc.indexOf('| reason | what it means, and what to do |');
  t.ok(start >= 0, 'the table is there');
  const rows = doc
    .slice(start)
    .split('\n')
    .slice(2)
    .filter((_, i, all) => all.slice(0, i + 1).every((line) => line.startsWith('|')));
  const documented = rows.map((row) => /^\| `([a-z_]+)` \| (.+) \|$/.exec(row));
  for (const [i, match] of documented.entries()) t.ok(match, `row ${i + 1} is a reason and what to do: ${rows[i]}`);
  const names = documented.map((m) => m?.[1]);
  t.same([...names].sort(), Object.keys(BYPASS_REASONS).sort(), 'the same reasons as BYPASS_REASONS');
  for (const m of documented) if (m) t.ok(m[2] && m[2].length > 20, `${m[1]}: says what to do`);
});
