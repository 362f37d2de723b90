import t from 'tap';
import { ArtifactRefSchema } from '../../src/contract/parts.js';
import { ARTIFACT_KINDS, ORIGINAL_KINDS, SEARCHED_KINDS } from '../../src/history/artifact-kinds.js';

t.test('one table of artifact kinds: search covers every original, none of the service’s own records', async (t) => {
  t.same([...SEARCHED_KINDS], [...ORIGINAL_KINDS], 'every kind of original is searched');
  t.ok(SEARCHED_KINDS.includes('tool_result_duplicate'), 'a duplicate compaction cleared among them');
  t.notOk(SEARCHED_KINDS.includes('summary_cache'), 'not the summary cache');
  t.notOk(SEARCHED_KINDS.includes('proxy_conversation'), 'not the proxy’s conversation records');
  for (const [kind, entry] of Object.entries(ARTIFACT_KINDS)) t.ok(entry.what.length > 10, `${kind} is described`);
  const described = ArtifactRefSchema.shape.kind.description ?? '';
  t.same(described.split(/, | or /), [...ORIGINAL_KINDS], 'the response schema lists the kinds of the table, in its order');
});
