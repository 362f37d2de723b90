import t from 'tap';
import { ArtifactRefSchema } from '../../src/contract/parts.js';
import { ARTIFACT_KINDS, ORIGINAL_KINDS, SEARCHED_KINDS } from '../../src/history/artifact-kinds.js';
import { CALL_KIND, SUMMARY_TEXT_KIND, USAGE_KIND } from '../../src/service/conversations.js';
import { WINDOW_RANGE } from '../../src/strategies/fit/window-marker.js';

t.test('one table of artifact kinds: search covers every original, none of the service’s own records', async (t) => {
  const searched: readonly string[] = SEARCHED_KINDS;
  t.same([...SEARCHED_KINDS], [...ORIGINAL_KINDS], 'every kind of original is searched');
  t.ok(searched.includes('tool_result_duplicate'), 'a duplicate compaction cleared among them');
  t.ok(searched.includes(WINDOW_RANGE), "fit's window's removed ranges among them");
  t.notOk(searched.includes('summary_cache'), 'not the summary cache');
  t.notOk(searched.includes('proxy_conversation'), 'not the proxy’s conversation records');
  t.notOk(searched.includes('proxy_sealed'), 'not the text behind the proxy’s sealed compaction items');
  for (const kind of [CALL_KIND, USAGE_KIND, SUMMARY_TEXT_KIND]) {
    t.ok(kind in ARTIFACT_KINDS, `${kind} is in the table`);
    t.notOk(searched.includes(kind), `${kind} (the conversation record) is not searched`);
  }
  for (const [kind, entry] of Object.entries(ARTIFACT_KINDS)) t.ok(entry.what.length > 10, `${kind} is described`);
  const described = ArtifactRefSchema.shape.kind.description ?? '';
  t.same(described.split(/, | or /), [...ORIGINAL_KINDS], 'the response schema lists the kinds of the table, in its order');
});
