/**
 * Cache markers, as a provider names them on content blocks (Anthropic's and the
 * OpenAI-compatible APIs' `cache_control`): clients move their cache breakpoints every call
 * (Claude Code and opencode mark the newest messages), and a moved marker is not a rewritten
 * past. A provider's entry (`providers.ts`) says which key is its marker; the conversation state
 * reads messages through these functions only.
 */
export interface CacheMarkers {
  /** A message's JSON with the markers left out, and a content of one text block as that text. Linear. */
  normalized(message: unknown): string;
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

function normalizer(marker: string): CacheMarkers['normalized'] {
  const quoted = JSON.stringify(marker);
  return (message) => {
    const json = JSON.stringify(message) ?? 'null';
    if (!json.includes(quoted) && !json.includes('"content":[{"type":"text"')) return json;
    return (
      JSON.stringify(message, (key, value: unknown) =>
        key === marker ? undefined : key === 'content' ? plain(value, marker) : value,
      ) ?? 'null'
    );
  };
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
  return { normalized: normalizer(marker), follow: follower(marker) };
}
