/**
 * Cache markers, as a provider names them on content blocks (Anthropic's and the
 * OpenAI-compatible APIs' `cache_control`): clients move their cache breakpoints every call
 * (Claude Code and opencode mark the newest messages), and a moved marker is not a rewritten
 * past. A provider's entry (`providers.ts`) says which key is its marker; the conversation state
 * reads messages through these functions only.
 */
export interface CacheMarkers {
  /** The block key the provider's cache breakpoints are written under (what the functions below leave out). */
  readonly marker: string;
  /** A message's JSON with the markers left out, and a content of one text block as that text. Linear. */
  normalized(message: unknown): string;
  /** What `normalized` serializes: the message itself (the same object) when it has nothing to leave out. */
  stripped(message: unknown): unknown;
  /** `ours` with `from`'s markers copied on block by block (a message of ours follows the client's breakpoints). */
  follow(ours: unknown, from: unknown): unknown;
}

/**
 * Content of one text block is the same as that text: Claude Code sends its system message as a
 * block (holding the cache breakpoint) on one call and as a string on the next.
 */
function plain(content: unknown, marker: string): unknown {
  if (!Array.isArray(content) || content.length !== 1) return content;
  const only = content[0] as { type?: unknown; text?: unknown } | null;
  if (typeof only !== 'object' || only === null || only.type !== 'text' || typeof only.text !== 'string') return content;
  const keys = Object.keys(only).filter((k) => k !== marker);
  return keys.length === 2 ? only.text : content;
}

/**
 * `value` with every `marker` key left out and every `content` made `plain`, at any depth, as
 * `JSON.stringify` with a replacer would serialize it, but the same object when nothing changes
 * (most messages: a replacer makes V8 leave its fast serializer for every key of the message).
 */
function strip(value: unknown, marker: string): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = strip(value[i], marker);
      if (item === value[i]) continue;
      out ??= value.slice();
      out[i] = item;
    }
    return out ?? value;
  }
  let out: Record<string, unknown> | undefined;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (key === marker) {
      if (!out) {
        out = {};
        for (let j = 0; j < i; j++) out[keys[j] as string] = record[keys[j] as string];
      }
      continue;
    }
    const original = record[key];
    const item = strip(key === 'content' ? plain(original, marker) : original, marker);
    if (item !== original && !out) {
      out = {};
      for (let j = 0; j < i; j++) if (keys[j] !== marker) out[keys[j] as string] = record[keys[j] as string];
    }
    if (out) out[key] = item;
  }
  return out ?? value;
}

function normalizer(marker: string): CacheMarkers['normalized'] {
  return (message) => JSON.stringify(strip(message, marker)) ?? 'null';
}

function follower(marker: string): CacheMarkers['follow'] {
  return (ours, from) => {
    const mine = (ours as { content?: unknown } | null)?.content;
    const theirs = (from as { content?: unknown } | null)?.content;
    if (!Array.isArray(mine)) return ours;
    let changed = false;
    const content = mine.map((block, i) => {
      if (typeof block !== 'object' || block === null) return block;
      const given = Array.isArray(theirs) ? (theirs[i] as Record<string, unknown> | undefined)?.[marker] : undefined;
      const had = marker in block;
      if (!had && given === undefined) return block;
      changed = true;
      const { [marker]: _old, ...rest } = block as Record<string, unknown>;
      return given === undefined ? rest : { ...rest, [marker]: given };
    });
    return changed ? { ...(ours as object), content } : ours;
  };
}

/** The functions for a provider whose cache marker is the block key `marker`. */
export function cacheMarkers(marker: string): CacheMarkers {
  return { marker, normalized: normalizer(marker), stripped: (message) => strip(message, marker), follow: follower(marker) };
}
