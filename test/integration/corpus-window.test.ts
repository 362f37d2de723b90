import assert from 'node:assert/strict';
import t from 'tap';
import { Compactor } from '../../src/service/compactor.js';
import { windowStrategy } from '../../src/strategies/sliding-window.js';
import { TokenCounter } from '../../src/tokens/counter.js';
import { type ConvertedTranscript, loadConverted } from '../support/convert.js';
import { loadCorpus, type Transcript } from '../support/corpus.js';
import { checkKeepOrDrop } from '../support/invariants.js';
import { schemaErrors } from '../support/schemas.js';

const KEEPS = [
  { runs: 0 },
  { runs: 1 },
  { runs: 3 },
  { messages: 1 },
  { messages: 10 },
  { messages: 60 },
  { tokens: 2000 },
  { tokens: 20_000 },
];

const real = loadCorpus();
t.ok(real.length >= 27, `the corpus has its transcripts (${real.length})`);
const corpus: (Transcript | ConvertedTranscript)[] = [...real, ...loadConverted()];

for (const transcript of corpus) {
  t.test(transcript.file, async (t) => {
    const compactor = new Compactor(new TokenCounter(50_000));
    const req = {
      messages: transcript.messages,
      ...('system' in transcript && transcript.system ? { system: transcript.system } : {}),
      ...(transcript.tools ? { tools: transcript.tools } : {}),
      ...(transcript.model ? { model: transcript.model } : {}),
    };
    t.same(schemaErrors(transcript.format, transcript.messages), [], 'input passes the provider schema');
    const before = compactor.tokens(req);
    t.equal(before.format, transcript.format, 'format detected from shape');
    for (const keep of KEEPS) {
      for (const keepFirstUser of [true, false]) {
        const res = await compactor.run(windowStrategy, req, { keep, keep_first_user: keepFirstUser });
        const label = `${JSON.stringify(keep)} keep_first_user=${keepFirstUser}`;
        checkKeepOrDrop(transcript.format, transcript.messages, res.messages, res.actions);
        assert.deepEqual(schemaErrors(transcript.format, res.messages), [], `${label}: provider schema`);
        assert.ok(res.tokens.after <= res.tokens.before, `${label}: tokens never grow`);
        if (keep.tokens !== undefined && !res.warnings.some((w) => w.code === 'target_not_met')) {
          const kept = compactor.tokens({ ...req, messages: res.messages });
          assert.ok(kept.total - kept.tools - kept.system - 3 <= keep.tokens, `${label}: within the token budget`);
        }
        if (keep.messages === 60 && transcript.messages.length > 80) {
          // Without the first user message, formats that must start with a user turn (Anthropic,
          // Gemini) can only cut before a user turn; an agent loop may have none to cut at.
          const explained = res.warnings.some((w) => w.code === 'unsafe_cut_avoided');
          assert.ok(res.applied || (!keepFirstUser && explained), `${label}: a long transcript is reduced`);
        }
      }
      t.pass(`window ${JSON.stringify(keep)}: valid output`);
    }
  });
}
