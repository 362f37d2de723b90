/**
 * Every kind of artifact the service stores, in one table: what compaction and summarization
 * record (`OriginalSpec.kind`), what `expand` and the MCP `recall` tool read back, and which of
 * them the MCP `search` tool looks through.
 *
 * Search covers the originals a model lost sight of: everything a strategy took out of a history
 * (`searched: true`). It leaves out the service's own records, which are no text of the
 * conversation: the summary cache (a summary the model has already read, keyed by the range it
 * covers) and the proxy's conversation records (lists of artifact ids, read only to narrow a search
 * to one conversation).
 */
export const ARTIFACT_KINDS = {
  tool_result: { searched: true, what: 'the result of a tool call, cleared from the history' },
  tool_result_duplicate: {
    searched: true,
    what: 'the result of a tool call, cleared because a later call returned the same output',
  },
  tool_result_truncated: {
    searched: true,
    what: 'the whole result of a tool call whose middle was cut from the history',
  },
  tool_input: { searched: true, what: 'the arguments of a tool call, cleared from the history' },
  thinking: { searched: true, what: 'a thinking block removed from the history' },
  summary_range: { searched: true, what: 'the messages a summary replaced, as they were' },
  section_range: { searched: true, what: 'the messages a section summary replaced, as they were' },
  summary_cache: { searched: false, what: 'a summary the service made, kept to reuse for the same messages' },
  proxy_conversation: {
    searched: false,
    what: 'the proxy’s record of a conversation: the ids of the artifacts its upstream history names',
  },
} as const satisfies Record<string, { searched: boolean; what: string }>;

/** A kind of stored artifact. */
export type ArtifactKind = keyof typeof ARTIFACT_KINDS;

/** The kinds an original taken out of a history may have (what a strategy offloads). */
export type OriginalKind = Exclude<ArtifactKind, 'summary_cache' | 'proxy_conversation'>;

/** What the proxy records of a conversation (`proxy/conversation.ts`); search reads it to narrow to one conversation. */
export const CONVERSATION_KIND = 'proxy_conversation' as const satisfies ArtifactKind;

/** The kinds an original taken out of a history may have, in the table's order. */
export const ORIGINAL_KINDS: readonly OriginalKind[] = (Object.keys(ARTIFACT_KINDS) as ArtifactKind[]).filter(
  (k): k is OriginalKind => k !== 'summary_cache' && k !== CONVERSATION_KIND,
);

/** The kinds the MCP `search` tool looks through (see the table). */
export const SEARCHED_KINDS: readonly ArtifactKind[] = (Object.keys(ARTIFACT_KINDS) as ArtifactKind[]).filter(
  (k) => ARTIFACT_KINDS[k].searched,
);

/** What an artifact of `kind` is, in words a model reads; the kind itself when it is not in the table. */
export function describeKind(kind: string): string {
  return kind in ARTIFACT_KINDS ? ARTIFACT_KINDS[kind as ArtifactKind].what : kind;
}
