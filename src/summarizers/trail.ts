import { TRAIL_CLASSES } from '../contract/parts.js';
import { splitTrail, TRAIL_HEADING, trailLine } from '../history/vocabulary.js';

export { TRAIL_CLASSES };

/**
 * The artifact trail (docs/strategies.md, "Summarization"): what an agent touched in a summarized range, built
 * deterministically from the tool calls' structured arguments and the range's text, folded
 * across summaries, and written after the summarizer's prose whatever the prose says.
 */

export type TrailClass = (typeof TRAIL_CLASSES)[number];

/** Classes written one item a line (`- item`): their items may hold commas. */
const LISTED = new Set<TrailClass>(['errors', 'constraints', 'commands']);
/** What a file became: the later operation wins, but a file created in the range stays created. */
export type FileOp = 'read' | 'written' | 'modified' | 'created' | 'deleted' | 'mentioned';
type FileClass = 'modified' | 'created' | 'deleted' | 'read' | 'mentioned';

/** Longest item kept: a longer one is cut with `…`. */
const MAX_ITEM = 160;
const cut = (s: string) => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > MAX_ITEM ? `${one.slice(0, MAX_ITEM - 1)}…` : one;
};

/** Normalizes a path as written (quotes around it, a trailing `/` or `:`): undefined when it is no path. */
function cleanPath(raw: string): string | undefined {
  let p = raw.trim();
  if (p.length >= 2 && (p[0] === '"' || p[0] === "'") && p.at(-1) === p[0]) p = p.slice(1, -1);
  if (p === '' || p.length > 300 || p === '/dev/null' || p.startsWith('/dev/') || /[\s$*?{}<>|`]/.test(p)) return undefined;
  return p;
}

/** The line that says what the budget left out: `left out (trail budget): read 12, commands 40`. */
const LEFT_OUT = 'left out (trail budget): ';

export class Trail {
  private readonly files = new Map<string, FileClass>();
  private readonly sets = new Map<TrailClass, Map<string, string>>();
  /** Items earlier trails left out, by class (read back from their last line): a fold keeps the count. */
  private readonly dropped = new Map<TrailClass, number>();

  /** Records a file operation; `written` is created for a file the trail has not seen, modified otherwise. */
  file(raw: string, op: FileOp): void {
    const path = cleanPath(raw);
    if (path === undefined) return;
    const was = this.files.get(path);
    let now: FileClass;
    if (op === 'mentioned') now = was ?? 'mentioned';
    else if (op === 'read') now = was === undefined || was === 'mentioned' ? 'read' : was;
    else if (op === 'written')
      now =
        was === undefined || was === 'mentioned' || was === 'deleted' ? 'created' : was === 'created' ? 'created' : 'modified';
    else if (op === 'modified') now = was === 'created' ? 'created' : 'modified';
    else now = op;
    this.files.set(path, now);
  }

  /** Adds an item to a class that is not a file class (`urls`, `errors`, `tests`, `commands`, `constraints`); keyed by `key`. */
  add(cls: 'urls' | 'errors' | 'tests' | 'commands' | 'constraints', item: string, key = item): void {
    const text = cut(item);
    if (text === '') return;
    const set = this.sets.get(cls) ?? new Map<string, string>();
    this.sets.set(cls, set);
    // A later status (a test that failed then passed, a command's exit code) replaces the earlier.
    set.set(key, text);
  }

  /** Whether the trail holds a URL or file path already (mentions of it add nothing). */
  has(item: string): boolean {
    return this.files.has(item) || this.sets.get('urls')?.has(item) === true;
  }

  items(cls: TrailClass): string[] {
    if (cls === 'modified' || cls === 'created' || cls === 'deleted' || cls === 'read' || cls === 'mentioned')
      return [...this.files].filter(([, c]) => c === cls).map(([p]) => p);
    return [...(this.sets.get(cls)?.values() ?? [])];
  }

  /** How many items of a class earlier trails left out (their budget). */
  leftOut(cls: TrailClass): number {
    return this.dropped.get(cls) ?? 0;
  }

  /**
   * Reads a rendered trail back (the one a folded summary carries): every item in its class, in
   * the order written, and the counts of its `left out` line.
   */
  static parse(lines: readonly string[]): Trail {
    const t = new Trail();
    let current: TrailClass | undefined;
    for (const line of lines) {
      if (line.startsWith(LEFT_OUT)) {
        t.countLeftOut(line.slice(LEFT_OUT.length));
        continue;
      }
      const read = trailLine(line);
      if (!read) continue;
      if ('item' in read) {
        if (current) t.put(current, read.item);
        continue;
      }
      current = (TRAIL_CLASSES as readonly string[]).includes(read.label) ? (read.label as TrailClass) : undefined;
      if (current) for (const item of read.items) t.put(current, item);
    }
    return t;
  }

  private put(cls: TrailClass, item: string): void {
    if (cls === 'urls' || cls === 'errors' || cls === 'tests' || cls === 'commands' || cls === 'constraints') {
      const key =
        cls === 'tests' ? item.replace(/ \((?:failed|passed)\)$/, '') : cls === 'commands' ? item.replace(/ → .*$/, '') : item;
      this.add(cls, item, key);
    } else if (cleanPath(item) !== undefined) this.files.set(item, cls);
  }

  /** Adds `read 12, commands 40` (a `left out` line's counts) to the counts of items left out. */
  private countLeftOut(list: string): void {
    for (const part of list.split(', ')) {
      const m = /^([a-z]+) (\d{1,9})$/.exec(part);
      if (m && (TRAIL_CLASSES as readonly string[]).includes(m[1] as string))
        this.dropped.set(m[1] as TrailClass, this.leftOut(m[1] as TrailClass) + Number(m[2]));
    }
  }

  /** Adds every item of `later` after this trail's own (file operations replayed in order), and its counts of items left out. */
  merge(later: Trail): Trail {
    for (const [path, cls] of later.files) this.file(path, cls === 'created' ? 'created' : cls);
    for (const [cls, set] of later.sets) for (const [key, item] of set) this.add(cls as 'urls', item, key);
    for (const [cls, n] of later.dropped) this.dropped.set(cls, this.leftOut(cls) + n);
    return this;
  }
}

/**
 * Whether the prose holds an item, in time linear in the prose's length whatever the number of
 * items: a path, URL or other one-word item is looked up among the prose's words (split at
 * whitespace, quotes, brackets and commas, without trailing punctuation); the first 100 items
 * with spaces (errors, constraints, commands) are searched for, later ones count as not held.
 */
function proseIndex(prose: string): (item: string) => boolean {
  const words = new Set<string>();
  for (const word of prose.split(/[\s"'`()<>[\]{},;|*]+/)) {
    words.add(word);
    words.add(word.replace(/[.:!?]+$/, ''));
  }
  let searches = 100;
  return (item) => words.has(item) || (item.includes(' ') && searches-- > 0 && prose.includes(item));
}

/** Tokens an item costs in the trail, estimated (paths tokenize densely: about 3 characters a token). */
const itemTokens = (item: string) => Math.ceil((item.length + 2) / 3);

export interface ClassCount {
  class: TrailClass | 'references';
  found: number;
  kept: number;
  appended: number;
  left_out: number;
}

/**
 * A class's items (in the order met) that fit in `room` tokens (estimated), and the room left:
 * all of them when they fit; else the newest first, an item too long for what is left skipped
 * for older, shorter ones: the oldest are cut first. Kept items stay in the order met. The
 * class's label costs 3 tokens, once.
 */
function fitClass(items: readonly string[], room: number): { kept: string[]; room: number } {
  if (items.length === 0) return { kept: [], room };
  const whole = items.reduce((n, item) => n + itemTokens(item), 3);
  if (whole <= room) return { kept: [...items], room: room - whole };
  const take = new Uint8Array(items.length);
  let left = room - 3;
  let any = false;
  for (let i = items.length - 1; i >= 0 && left > 0; i--) {
    const cost = itemTokens(items[i] as string);
    if (cost > left) continue;
    take[i] = 1;
    left -= cost;
    any = true;
  }
  return any ? { kept: items.filter((_, i) => take[i] === 1), room: left } : { kept: [], room };
}

/**
 * The `/`-boundary suffixes of items (`./a/b.py` gives `a/b.py` and `b.py`; with `self`, the item
 * too): strings the text holds verbatim wherever it holds the item. Linear in their length.
 */
function suffixesOf(items: readonly string[], into: Set<string>, self: boolean): void {
  for (const item of items) {
    if (self) into.add(item);
    for (let at = item.indexOf('/'); at >= 0 && at < item.length - 1; at = item.indexOf('/', at + 1))
      into.add(item.slice(at + 1));
  }
}

/**
 * The mentioned paths to list: those no item listed before them holds verbatim (`sphinx/util.py`
 * inside a `read: /testbed/sphinx/util.py`), fitted in `room`; then those another kept mentioned
 * path holds (`docs/a.md` beside `./docs/a.md`) are taken out, their room given back. Returns the
 * kept items, the room left and the items other items hold.
 */
function fitMentioned(items: readonly string[], before: readonly string[], room: number) {
  const held = new Set<string>();
  suffixesOf(before, held, true);
  const fresh = items.filter((item) => !held.has(item));
  const fitted = fitClass(fresh, room);
  const inner = new Set<string>();
  suffixesOf(fitted.kept, inner, false);
  const kept = fitted.kept.filter((item) => !inner.has(item));
  const freed = fitted.kept.reduce((n, item) => n + (inner.has(item) ? itemTokens(item) : 0), 0);
  const redundant = items.filter((item) => held.has(item) || inner.has(item));
  return { kept, room: fitted.room + freed, redundant };
}

/**
 * The trail as written after the prose, within `budget` tokens (estimated at 3 characters a
 * token). What is cut, in this order (docs/strategies.md, "Artifact trail"): whole classes from the end of
 * `TRAIL_CLASSES` (commands first, then mentioned paths, tests, constraints, errors, URLs, files
 * read, deleted, created, and modified last); in the one class the budget splits, its oldest
 * items first (`fitClass`). A mentioned path that another listed item holds verbatim is not
 * listed again (`fitMentioned`). A last line says what the budget left out, this time and in the
 * trails folded before (`Trail.leftOut`). With the report, by class: found, kept (in the
 * summarizer's prose), appended (in the trail only), left out (earlier trails' included).
 */
export function renderTrail(trail: Trail, prose: string, budget: number): { text: string; counts: ClassCount[] } {
  let room = budget - 12;
  const held = proseIndex(prose);
  const lines: string[] = [TRAIL_HEADING];
  const counts: ClassCount[] = [];
  const omitted: string[] = [];
  const listed: string[] = [];
  for (const cls of TRAIL_CLASSES) {
    const all = trail.items(cls);
    const earlier = trail.leftOut(cls);
    if (all.length === 0 && earlier === 0) continue;
    const fitted = cls === 'mentioned' ? fitMentioned(all, listed, room) : { ...fitClass(all, room), redundant: [] };
    const { kept, redundant } = fitted;
    room = fitted.room;
    listed.push(...kept);
    const inProse = all.reduce((n, item) => n + (held(item) ? 1 : 0), 0);
    // Appended: in the trail's text (listed, or held by another item), not in the prose.
    const appended = [...kept, ...redundant].reduce((n, item) => n + (held(item) ? 0 : 1), 0);
    // Items an earlier trail left out count as found and left out again: the fold keeps the count.
    const leftOut = all.length - kept.length - redundant.length + earlier;
    counts.push({ class: cls, found: all.length + earlier, kept: inProse, appended, left_out: leftOut });
    if (leftOut > 0) omitted.push(`${cls} ${leftOut}`);
    if (kept.length === 0) continue;
    if (LISTED.has(cls)) lines.push(`${cls}:`, ...kept.map((k) => `- ${k}`));
    else lines.push(`${cls}: ${kept.join(', ')}`);
  }
  if (omitted.length > 0) lines.push(`${LEFT_OUT}${omitted.join(', ')}`);
  return { text: lines.length > 1 ? lines.join('\n') : '', counts };
}

/** A summary's prose and the trail it carries (an earlier summary being folded), parsed back. */
export function trailOf(summary: string | null): { prose: string | null; trail: Trail } {
  if (summary === null) return { prose: null, trail: new Trail() };
  const { prose, lines } = splitTrail(summary);
  return { prose, trail: Trail.parse(lines) };
}
