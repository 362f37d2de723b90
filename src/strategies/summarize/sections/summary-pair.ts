import { sha256Hex } from '../../../history/address.js';
import { insertItems } from '../../../history/plan/apply.js';
import type { Insert } from '../../../history/plan/types.js';
import type { Item } from '../../../history/types.js';
import { rangeOriginals, summaryRequest } from '../range.js';
import { type Around, lastReasoning, type Pair } from './model.js';
import type { SectionsRun } from './state.js';

/**
 * Summarizes pairs into one summary pair, in the role their originals had: a synthetic tool
 * exchange where the summarized pairs used tools and the format takes one (carrying, in the current
 * turn, the placeholder signature and the last reasoning text), else assistant text starting with
 * the section marker; either must fit between its neighbours, or nothing is summarized (and a
 * warning says so).
 */
export async function summarizePairs(
  run: SectionsRun,
  pairs: readonly Pair[],
  current: boolean,
  around: Around,
): Promise<Pair | undefined> {
  const { h, o } = run;
  const { format } = h;
  const covered = run.indexesOf(pairs);
  const items = covered.map((i) => h.items[i] as Item);
  const usedTools = items.some((it) => it.calls.length > 0);
  const id = `call_summary_${sha256Hex(JSON.stringify(covered)).slice(0, 16)}`;
  const exchange = (text: string, signed: boolean, reasoning: string | undefined): Insert[] => [
    { kind: 'exchange', id, text, signed, reasoning },
  ];
  const plain = (text: string): Insert[] => [{ kind: 'text', role: 'assistant', text }];
  const fits = (form: Insert[]) => {
    const roles = insertItems(format, form);
    const first = roles?.[0];
    const last = roles?.[roles.length - 1];
    return !!first && !!last && format.canFollow(around.prev, first) && (!around.next || format.canFollow(last, around.next));
  };
  const probe = usedTools && insertItems(format, exchange('x', false, undefined)) ? exchange('x', false, undefined) : plain('x');
  const form = [probe, plain('x')].findIndex(fits);
  if (form < 0) {
    run.warnings.push({
      code: 'unsafe_cut_avoided',
      message: `messages ${covered[0]}–${covered[covered.length - 1]} were not summarized: no summary form fits between their neighbours in ${format.name}`,
    });
    return undefined;
  }
  const range = run.offloadRange(covered);
  // The trail reads what compaction offloaded from the section (`rangeOriginals`).
  const settled = await run.settle('section', o, range.rangeJson, covered, async (signal) =>
    summaryRequest(
      h,
      covered,
      null,
      o,
      signal,
      false,
      o.trail_tokens > 0 ? await rangeOriginals(h, covered, run.ctx) : undefined,
      range.id,
    ),
  );
  const text = run.ctx.markers.section(range.id, settled.text);
  // Reasoning survives only in the current turn: a placeholder signature, the last reasoning text.
  const signed = current && items.some((it) => it.thinking || format.hasSignature(h.messages[it.index]));
  const reasoning = current ? lastReasoning(h, covered) : undefined;
  const insert = form === 0 && usedTools && probe[0]?.kind === 'exchange' ? exchange(text, signed, reasoning) : plain(text);
  return { kind: 'summary', insert, covers: covered };
}

/** The user messages of merged sections, summarized (QA merge with `summarize_user_messages`). */
export async function summarizeUsers(run: SectionsRun, indexes: readonly number[]): Promise<string> {
  const { h, o } = run;
  const prompt = [
    o.summarizer.prompt,
    "Summarize only the user's requests and constraints, in the user's own words where possible.",
  ]
    .filter(Boolean)
    .join('\n');
  const asked = { ...o, summarizer: { ...o.summarizer, prompt } };
  const covered = JSON.stringify(indexes.map((i) => h.messages[i]));
  const settled = await run.settle('users', asked, covered, indexes, (signal) => summaryRequest(h, indexes, null, asked, signal));
  return settled.text;
}
