import { TRAIL_CLASSES } from '../contract/parts.js';
import { splitTrail, TRAIL_HEADING, trailLine } from '../history/vocabulary.js';

export { TRAIL_CLASSES };

/**
 * The artifact trail (README, Summarization): what an agent touched in a summarized range, built
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

export class Trail {
  private readonly files = new Map<string, FileClass>();
  private readonly sets = new Map<TrailClass, Map<string, string>>();

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

  /** Folds an earlier trail (its rendered lines) in: its items come first, this range's later. */
  static parse(lines: readonly string[]): Trail {
    const t = new Trail();
    let current: TrailClass | undefined;
    for (const line of lines) {
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

  /** Adds every item of `later` after this trail's own (file operations replayed in order). */
  merge(later: Trail): Trail {
    for (const [path, cls] of later.files) this.file(path, cls === 'created' ? 'created' : cls);
    for (const [cls, set] of later.sets) for (const [key, item] of set) this.add(cls as 'urls', item, key);
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
 * The trail as written after the prose, within `budget` tokens (estimated): classes in priority
 * order (modified, created, deleted, read, URLs, errors, then the rest), each class's items in
 * the order met, an item that does not fit left out and counted; a last line says what was left
 * out. With the report, by class: found, kept (in the summarizer's prose), appended (in the trail
 * only), left out (by the budget).
 */
export function renderTrail(trail: Trail, prose: string, budget: number): { text: string; counts: ClassCount[] } {
  let room = budget - 12;
  const held = proseIndex(prose);
  const lines: string[] = [TRAIL_HEADING];
  const counts: ClassCount[] = [];
  const omitted: string[] = [];
  for (const cls of TRAIL_CLASSES) {
    const all = trail.items(cls);
    if (all.length === 0) continue;
    const kept: string[] = [];
    let inProse = 0;
    let appended = 0;
    for (const item of all) {
      const present = held(item);
      if (present) inProse++;
      const cost = itemTokens(item);
      if (cost + 3 > room) continue;
      room -= cost + (kept.length === 0 ? 3 : 0);
      kept.push(item);
      if (!present) appended++;
    }
    const leftOut = all.length - kept.length;
    counts.push({ class: cls, found: all.length, kept: inProse, appended, left_out: leftOut });
    if (leftOut > 0) omitted.push(`${cls} ${leftOut}`);
    if (kept.length === 0) continue;
    if (LISTED.has(cls)) lines.push(`${cls}:`, ...kept.map((k) => `- ${k}`));
    else lines.push(`${cls}: ${kept.join(', ')}`);
  }
  if (omitted.length > 0) lines.push(`left out (trail budget): ${omitted.join(', ')}`);
  return { text: lines.length > 1 ? lines.join('\n') : '', counts };
}

/** A summary's prose and the trail it carries (an earlier summary being folded), parsed back. */
export function trailOf(summary: string | null): { prose: string | null; trail: Trail } {
  if (summary === null) return { prose: null, trail: new Trail() };
  const { prose, lines } = splitTrail(summary);
  return { prose, trail: Trail.parse(lines) };
}
