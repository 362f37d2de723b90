import { readFileSync } from 'node:fs';
import { Compactor, TokenCounter, windowStrategy } from '../dist/index.js';
import { generateHistory } from './lib/generate.mjs';
const corpus = JSON.parse(readFileSync('/work/shared/corpus/real/openai/mini-swe-agent-gemini-3-pro__psf__requests-1142.json','utf8')).messages;
const gen = generateHistory();
for (const [name, messages, N] of [['corpus', corpus, 50000], ['gen', gen, 100000]]) {
  const text = JSON.stringify({messages, model:'gpt-4o'});
  for (let i=0;i<4;i++){
    const c = new Compactor(new TokenCounter(200000));
    let t0=performance.now(); const req = JSON.parse(text); let t1=performance.now();
    const out = await c.run(windowStrategy, req, {keep:{tokens:N}, keep_first_user:true}); let t2=performance.now();
    const req2 = JSON.parse(text); let t3=performance.now();
    await c.run(windowStrategy, req2, {keep:{tokens:N}, keep_first_user:true}); let t4=performance.now();
    const tk = new Compactor(new TokenCounter(200000)).tokens(req); let t5=performance.now();
    console.log(name, 'parse', (t1-t0).toFixed(1), 'cold run', (t2-t1).toFixed(1), 'warm run', (t4-t3).toFixed(1), 'tokens', (t5-t4).toFixed(1), tk.total, out.messages.length, out.tokens);
  }
}
