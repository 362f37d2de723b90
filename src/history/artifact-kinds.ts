/**
 * Every kind of artifact the service stores, in one table: what compaction and summarization
 * record (`OriginalSpec.kind`), what `expand` and the MCP `recall` tool read back, which of them
 * the MCP `search` tool looks through, and the service's own records.
 *
 * Search covers the originals a model lost sight of: everything a strategy took out of a history
 * (`searched: true`; these, and only these, are `OriginalKind`s). It leaves out the service's own
 * records, which are no text of the conversation: the summary cache (a summary the model has
 * already read, keyed by the range it covers), the proxy's conversation records (lists of artifact
 * ids, read only to narrow a search to one conversation), and the conversation record of
 * `service/conversations.ts` (counts and bills of each model call, and the summary texts the page
 * links to), and the text behind the proxy's sealed compaction items (`proxy/compaction/wire.ts`).
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
  window_range: { searched: true, what: "the messages fit's window removed to fit the context, as they were" },
  summary_cache: { searched: false, what: 'a summary the service made, kept to reuse for the same messages' },
  proxy_conversation: {
    searched: false,
    what: 'the proxy’s record of a conversation: the ids of the artifacts its upstream history names',
  },
  conversation_call: {
    searched: false,
    what: 'one model call of a conversation as the conversation record keeps it: counts, ids and bills, no content',
  },
  conversation_usage: {
    searched: false,
    what: 'the usage a provider reported for a call the conversation record holds, priced',
  },
  summary_text: { searched: false, what: 'the text of a summary a call wrote, kept for the conversation page to link to' },
  proxy_sealed: {
    searched: false,
    what: 'the summary text a sealed compaction item stands for, put back on the conversation’s later requests',
  },
} as const satisfies Record<string, { searched: boolean; what: string }>;

/** A kind of stored artifact. */
export type ArtifactKind = keyof typeof ARTIFACT_KINDS;

/** The kinds an original taken out of a history may have (what a strategy offloads): the searched kinds of the table. */
export type OriginalKind = {
  [K in ArtifactKind]: (typeof ARTIFACT_KINDS)[K]['searched'] extends true ? K : never;
}[ArtifactKind];

/** What the proxy records of a conversation (`proxy/conversation.ts`); search reads it to narrow to one conversation. */
export const CONVERSATION_KIND = 'proxy_conversation' as const satisfies ArtifactKind;

/** The summary cache's kind (`strategies/summarize/cache.ts`). */
export const SUMMARY_CACHE_KIND = 'summary_cache' as const satisfies ArtifactKind;

/** The kinds the MCP `search` tool looks through (see the table), in the table's order. */
export const SEARCHED_KINDS: readonly OriginalKind[] = (Object.keys(ARTIFACT_KINDS) as ArtifactKind[]).filter(
  (k): k is OriginalKind => ARTIFACT_KINDS[k].searched,
);

/** The kinds an original taken out of a history may have, in the table's order: the searched ones. */
export const ORIGINAL_KINDS: readonly OriginalKind[] = SEARCHED_KINDS;

/** What an artifact of `kind` is, in words a model reads; the kind itself when it is not in the table. */
export function describeKind(kind: string): string {
  return kind in ARTIFACT_KINDS ? ARTIFACT_KINDS[kind as ArtifactKind].what : kind;
}
