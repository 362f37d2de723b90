import { asArray, asObject, historyOf } from '../provider/parse.js';
import type { JsonObject, RecordedRequest } from '../provider/types.js';

/**
 * The shapes a client's requests had, as sorted sets of names (never contents or header values,
 * but for the feature-naming headers below): enough to see that a new version sends something new.
 */
export interface Shapes {
  /** `POST /v1/messages?beta=true`: method, path and query keys. */
  endpoints: string[];
  /** The body's top-level keys. */
  bodyKeys: string[];
  /** History items' roles. */
  roles: string[];
  /** History items' types (`item:function_call`) and their keys (`item-key:output_config`). */
  items: string[];
  /** Content blocks' or parts' types (`block:tool_result`) and keys (`block-key:cache_control`). */
  blocks: string[];
  /** Tools as `type:name` (`custom:apply_patch`, `custom:Bash` for Anthropic client tools). */
  tools: string[];
  /** Header names, and the values of headers that name features (`anthropic-beta=…`, `x-codex-beta-features=…`). */
  headers: string[];
}

/** Headers whose value names features, not a session or a machine: their values are part of the shape. */
const FEATURE_HEADERS = new Set([
  'anthropic-beta',
  'anthropic-version',
  'openai-beta',
  'x-codex-beta-features',
  'originator',
  'x-app',
]);
/** Headers that say nothing about the client (transport), left out. */
const TRANSPORT_HEADERS = new Set(['host', 'content-length', 'connection', 'transfer-encoding']);

function add(set: Set<string>, value: string): void {
  set.add(value);
}

function blockName(block: JsonObject): string {
  return typeof block.type === 'string' ? block.type : Object.keys(block).sort().join('+');
}

/** The shapes of a run's requests (model calls and token counts alike). */
export function shapesOf(requests: readonly RecordedRequest[]): Shapes {
  const sets = {
    endpoints: new Set<string>(),
    bodyKeys: new Set<string>(),
    roles: new Set<string>(),
    items: new Set<string>(),
    blocks: new Set<string>(),
    tools: new Set<string>(),
    headers: new Set<string>(),
  };
  for (const r of requests) {
    const url = new URL(r.url, 'http://x');
    const query = [...url.searchParams.keys()].map((k) => (k === 'key' ? 'key' : `${k}=${url.searchParams.get(k)}`));
    add(sets.endpoints, `${r.method} ${url.pathname}${query.length ? `?${query.join('&')}` : ''}`);
    for (const [name, value] of Object.entries(r.headers)) {
      if (TRANSPORT_HEADERS.has(name)) continue;
      if (!FEATURE_HEADERS.has(name) || value === undefined) add(sets.headers, name);
      else for (const v of String(value).split(',')) add(sets.headers, `${name}=${v.trim()}`);
    }
    const body = asObject(r.json);
    if (!body || !r.wire) continue;
    for (const key of Object.keys(body)) add(sets.bodyKeys, key);
    for (const raw of asArray(body.tools)) {
      const tool = asObject(raw) ?? {};
      const fn = asObject(tool.function) ?? tool;
      const decls = asArray(tool.functionDeclarations);
      if (decls.length > 0) for (const d of decls) add(sets.tools, `function:${String(asObject(d)?.name)}`);
      else
        add(sets.tools, `${typeof tool.type === 'string' ? tool.type : 'custom'}:${typeof fn.name === 'string' ? fn.name : '-'}`);
    }
    for (const rawItem of historyOf(r.wire, body)) {
      const item = asObject(rawItem);
      if (!item) continue;
      if (typeof item.role === 'string') add(sets.roles, item.role);
      if (typeof item.type === 'string') add(sets.items, `item:${item.type}`);
      for (const key of Object.keys(item)) add(sets.items, `item-key:${key}`);
      const content = typeof item.content === 'string' ? ['string'] : [];
      for (const c of content) add(sets.blocks, `block:${c}`);
      for (const rawBlock of [...asArray(item.content), ...asArray(item.parts)]) {
        const block = asObject(rawBlock);
        if (!block) continue;
        add(sets.blocks, `block:${blockName(block)}`);
        for (const key of Object.keys(block)) add(sets.blocks, `block-key:${key}`);
        for (const inner of asArray(block.content)) {
          const nested = asObject(inner);
          if (nested) add(sets.blocks, `block:${blockName(block)}>${blockName(nested)}`);
        }
      }
    }
  }
  const sorted = (s: Set<string>) => [...s].sort();
  return {
    endpoints: sorted(sets.endpoints),
    bodyKeys: sorted(sets.bodyKeys),
    roles: sorted(sets.roles),
    items: sorted(sets.items),
    blocks: sorted(sets.blocks),
    tools: sorted(sets.tools),
    headers: sorted(sets.headers),
  };
}

/** What one field of the shapes gained and lost. */
export interface ShapeChange {
  field: keyof Shapes;
  added: string[];
  removed: string[];
}

/** How `now` differs from `before`, field by field (only fields that changed). */
export function diffShapes(before: Shapes, now: Shapes): ShapeChange[] {
  const changes: ShapeChange[] = [];
  for (const field of Object.keys(before) as (keyof Shapes)[]) {
    const old = new Set(before[field]);
    const next = new Set(now[field]);
    const added = now[field].filter((v) => !old.has(v));
    const removed = before[field].filter((v) => !next.has(v));
    if (added.length > 0 || removed.length > 0) changes.push({ field, added, removed });
  }
  return changes;
}
