import assert from 'node:assert/strict';
import { formatByName } from '../../src/formats/registry.js';
import type { FormatAdapter } from '../../src/history/format.js';
import { buildGroups, headLength } from '../../src/history/groups.js';

export function adapter(name: string): FormatAdapter {
  const format = formatByName(name);
  if (!format) throw new Error(`no format ${name}`);
  return format;
}

/** Every structural rule of the format, checked by its own validator. */
export function violationsOf(format: string, messages: readonly unknown[]) {
  const a = adapter(format);
  return a.violations(a.parse(messages).items);
}

/**
 * The invariants every strategy output must keep (docs/strategies.md, guarantees 1–6), checked against the input:
 * valid for its format; head and newest group byte-identical; every output message is an input
 * message unchanged, in order (for strategies that only keep or drop); actions cover every input.
 * Throws (node:assert) so that fast-check can shrink a failure.
 */
export function checkKeepOrDrop(
  format: string,
  input: readonly unknown[],
  output: readonly unknown[],
  actions: readonly { index: number; action: string }[],
): void {
  const violations = violationsOf(format, output);
  assert.deepEqual(violations, [], 'output satisfies every structural rule');
  const items = adapter(format).parse(input).items;
  const groups = buildGroups(items);
  const head = headLength(groups);
  const json = (v: unknown) => JSON.stringify(v);
  assert.equal(json(output.slice(0, head)), json(input.slice(0, head)), 'head kept byte-identical');
  const newest = groups[groups.length - 1];
  if (newest) {
    const tail = input.slice(newest.start);
    assert.equal(json(output.slice(output.length - tail.length)), json(tail), 'newest group kept byte-identical');
  }
  assert.equal(actions.length, input.length, 'one action per input message');
  const kept = actions.filter((a) => a.action === 'keep').map((a) => json(input[a.index]));
  assert.deepEqual(output.map(json), kept, 'output is exactly the kept input messages, in order');
}
