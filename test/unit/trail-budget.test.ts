import t from 'tap';
import { TRAIL_HEADING } from '../../src/history/vocabulary.js';
import { renderTrail, Trail, trailOf } from '../../src/summarizers/trail.js';

/**
 * The trail's budget (docs/strategies.md, "Artifact trail"): what is cut, in which order, and what a fold
 * keeps. Items are estimated at (length + 2) / 3 tokens; the heading and the `left out` line take
 * 12 of the budget, a class's label 3.
 */

const lineOf = (text: string, label: string) => text.split('\n').find((l) => l.startsWith(`${label}:`)) ?? '';
const itemsOf = (text: string, label: string) => {
  const line = lineOf(text, label);
  return line === '' ? [] : line.slice(label.length + 2).split(', ');
};

/** A trail of `n` files read (`r0.py`, `r1.py`, …) and `n` commands. */
function trail(n: number): Trail {
  const tr = new Trail();
  for (let i = 0; i < n; i++) {
    tr.file(`src/m${i}.py`, 'modified');
    tr.file(`r${i}.py`, 'read');
    tr.add('commands', `\`make step_${i}\``);
  }
  return tr;
}

t.test('whole classes are cut from the end of the order: commands first, modified files last', async (t) => {
  const all = renderTrail(trail(4), '', 10_000).text;
  t.equal(
    all,
    `${TRAIL_HEADING}\nmodified: src/m0.py, src/m1.py, src/m2.py, src/m3.py\nread: r0.py, r1.py, r2.py, r3.py\ncommands:\n- \`make step_0\`\n- \`make step_1\`\n- \`make step_2\`\n- \`make step_3\``,
  );
  // modified 3 + 4×4 = 19, read 3 + 4×3 = 15, commands 3 + 4×6 = 27; the heading and last line 12.
  const noCommands = renderTrail(trail(4), '', 12 + 19 + 15);
  t.equal(lineOf(noCommands.text, 'read'), 'read: r0.py, r1.py, r2.py, r3.py', 'read whole');
  t.notMatch(noCommands.text, 'commands:', 'commands cut first');
  t.match(noCommands.text, /left out \(trail budget\): commands 4$/);
  const modifiedOnly = renderTrail(trail(4), '', 12 + 19);
  t.same(itemsOf(modifiedOnly.text, 'modified'), ['src/m0.py', 'src/m1.py', 'src/m2.py', 'src/m3.py']);
  t.match(modifiedOnly.text, /left out \(trail budget\): read 4, commands 4$/);
  t.same(
    modifiedOnly.counts.map((c) => [c.class, c.left_out]),
    [
      ['modified', 0],
      ['read', 4],
      ['commands', 4],
    ],
  );
});

t.test('in the class the budget splits, the oldest items are cut first; the kept stay in their order', async (t) => {
  // modified whole (19), then room for the label and two of the four reads (3 + 3 + 3).
  const split = renderTrail(trail(4), '', 12 + 19 + 9);
  t.same(itemsOf(split.text, 'read'), ['r2.py', 'r3.py'], 'the two newest reads');
  t.match(split.text, /left out \(trail budget\): read 2, commands 4$/);
  // An item too long for what is left is skipped for older, shorter ones.
  const tr = new Trail();
  tr.file('a.py', 'read');
  tr.file('b.py', 'read');
  tr.file(`long/${'x'.repeat(30)}.py`, 'read');
  t.same(itemsOf(renderTrail(tr, '', 12 + 3 + 4).text, 'read'), ['a.py', 'b.py']);
});

t.test('a mentioned path another item holds verbatim is not listed again, and is not left out', async (t) => {
  const tr = new Trail();
  tr.file('/testbed/sphinx/util.py', 'read');
  tr.file('sphinx/util.py', 'mentioned');
  tr.file('util.py', 'mentioned');
  tr.file('docs/a.md', 'mentioned');
  tr.file('./docs/a.md', 'mentioned');
  tr.file('other/b.md', 'mentioned');
  tr.add('urls', 'https://example.org/docs/x.html');
  tr.file('docs/x.html', 'mentioned');
  const { text, counts } = renderTrail(tr, '', 1000);
  t.same(itemsOf(text, 'mentioned'), ['./docs/a.md', 'other/b.md']);
  for (const path of ['sphinx/util.py', 'util.py', 'docs/a.md', 'docs/x.html'])
    t.ok(text.includes(path), `${path} is in the text`);
  t.same(
    counts.find((c) => c.class === 'mentioned'),
    { class: 'mentioned', found: 6, kept: 0, appended: 6, left_out: 0 },
  );
  t.notMatch(text, 'left out');
  // Not a `/` boundary: `il.py` is no path the text holds as one.
  const partial = new Trail();
  partial.file('src/util.py', 'read');
  partial.file('il.py', 'mentioned');
  t.same(itemsOf(renderTrail(partial, '', 1000).text, 'mentioned'), ['il.py']);
});

t.test('a fold keeps everything the earlier trail held while the budget allows', async (t) => {
  const first = renderTrail(trail(3), '', 10_000).text;
  const back = trailOf(`prose\n\n${first}`).trail;
  t.equal(renderTrail(back, '', 10_000).text, first, 'parsed back, it renders the same');
  const later = new Trail();
  later.file('src/m1.py', 'modified');
  later.file('r9.py', 'read');
  later.file('r0.py', 'modified');
  later.add('commands', '`make step_1`', '`make step_1`');
  const folded = renderTrail(back.merge(later), '', 10_000).text;
  t.same(
    itemsOf(folded, 'modified'),
    ['src/m0.py', 'src/m1.py', 'src/m2.py', 'r0.py'],
    'a file read then changed moves to modified',
  );
  t.same(itemsOf(folded, 'read'), ['r1.py', 'r2.py', 'r9.py'], 'earlier items first, then the new range');
  t.equal(folded.split('\n').filter((l) => l === '- `make step_1`').length, 1, 'an item met again is listed once');
});

t.test('under the budget, a fold cuts the oldest items, and the left-out counts add up across folds', async (t) => {
  const budget = 12 + 19 + 9;
  const first = renderTrail(trail(4), '', budget).text;
  t.match(first, /left out \(trail budget\): read 2, commands 4$/);
  const back = trailOf(first).trail;
  t.equal(back.leftOut('read'), 2);
  t.equal(back.leftOut('commands'), 4);
  t.equal(renderTrail(back, '', budget).text, first, 'a fold of nothing new changes nothing: the trail is a fixed point');
  const later = new Trail();
  later.file('r4.py', 'read');
  later.add('commands', '`make step_9`');
  const second = renderTrail(back.merge(later), '', budget);
  t.same(itemsOf(second.text, 'read'), ['r3.py', 'r4.py'], 'the oldest read kept so far is cut for the new one');
  t.match(second.text, /left out \(trail budget\): read 3, commands 5$/);
  t.same(
    second.counts.find((c) => c.class === 'read'),
    { class: 'read', found: 5, kept: 0, appended: 2, left_out: 3 },
  );
  const parsed = Trail.parse(['left out (trail budget): read 2, bogus 3, commands x, mentioned 1']);
  t.same([parsed.leftOut('read'), parsed.leftOut('commands'), parsed.leftOut('mentioned')], [2, 0, 1]);
  const onlyCounts = renderTrail(parsed, '', 100);
  t.equal(onlyCounts.text, `${TRAIL_HEADING}\nleft out (trail budget): read 2, mentioned 1`, 'counts without items still say so');
});

t.test('items the prose holds are still listed (the trail is what the next fold reads), and counted as kept', async (t) => {
  const { text, counts } = renderTrail(trail(2), 'We changed src/m0.py and ran `make step_1` today.', 10_000);
  t.match(lineOf(text, 'modified'), 'src/m0.py');
  t.same(counts[0], { class: 'modified', found: 2, kept: 1, appended: 1, left_out: 0 });
});
