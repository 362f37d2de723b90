import t from 'tap';
import { build } from '/work/main/test/support/app.js';

const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const deepArr = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const u = '{"role":"user","content":"hi"}';
const a = '{"role":"assistant","content":"ok"}';
const probes: Record<string, [string, string, Record<string, string>?]> = {
  usageFloat: ['/v1/tokens', `{"messages":[${u}],"usage":{"total_tokens":1.5}}`],
  usageFloatW: ['/v1/window', `{"messages":[${u}],"usage":{"total_tokens":1.5}}`],
  usageNeg: ['/v1/tokens', `{"messages":[${u}],"usage":{"total_tokens":-100}}`],
  usageHuge: ['/v1/tokens', `{"messages":[${u}],"usage":{"total_tokens":1e300}}`],
  usageStr: ['/v1/tokens', `{"messages":[${u}],"usage":{"total_tokens":"5"}}`],
  sysDeepAnth: ['/v1/tokens', `{"messages":[${u}],"format":"anthropic","system":[${deep(100000)}]}`],
  sysDeepOai: ['/v1/tokens', `{"messages":[${u}],"system":[${deep(100000)}]}`],
  toolsDeep: ['/v1/tokens', `{"messages":[${u}],"tools":[${deep(100000)}]}`],
  usageDeep: ['/v1/tokens', `{"messages":[${u}],"usage":{"total_tokens":5,"x":${deep(100000)}}}`],
  usageDeepW: ['/v1/window', `{"messages":[${u}],"usage":{"total_tokens":5,"x":${deep(100000)}}}`],
  anthDeepBlock: [
    '/v1/tokens',
    `{"messages":[{"role":"user","content":[{"type":"weird","x":${deep(100000)}}]}],"format":"anthropic"}`,
  ],
  oaiDeepPart: ['/v1/tokens', `{"messages":[{"role":"user","content":[{"type":"weird","x":${deep(100000)}}]}]}`],
  validateDeep: ['/v1/validate', `{"messages":[{"role":"user","content":"x","meta":${deep(100000)}}]}`],
  windowDeepTool: [
    '/v1/window',
    `{"messages":[${u},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":${deepArr(100000)}}]}`,
  ],
  validateDeepTool: [
    '/v1/validate',
    `{"messages":[${u},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":${deepArr(100000)}}]}`,
  ],
  tokensDeepTool: [
    '/v1/tokens',
    `{"messages":[${u},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":${deepArr(100000)}}]}`,
  ],
  deepMsgs: ['/v1/tokens', `{"messages":${deepArr(100000)}}`],
  deepTop: ['/v1/tokens', `${deepArr(1000000)}`],
  deepKeep: ['/v1/window', `{"messages":[${u}],"keep":${deep(100000)}}`],
  bigRuns: ['/v1/window', `{"messages":[${u}],"keep":{"runs":1e400}}`],
  emptyMsg: ['/v1/window', `{"messages":[{}]}`],
  fnOrphan: ['/v1/validate', `{"messages":[${u},{"role":"function","name":"f","content":"x"}]}`],
  fnOrphanW: ['/v1/window', `{"messages":[${u},{"role":"function","name":"f","content":"x"}]}`],
  emptyAsst: ['/v1/window', `{"messages":[${u},{"role":"assistant","content":""},${u}]}`],
  anthResultInAsst: [
    '/v1/window',
    `{"messages":[${u},{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"x"}]}]}`,
  ],
  anthFmtOai: [
    '/v1/window',
    `{"format":"anthropic","messages":[${u},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
  ],
  oaiFmtAnth: [
    '/v1/window',
    `{"format":"openai-chat","messages":[${u},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]}`,
  ],
  longModel: ['/v1/tokens', `{"messages":[${u}],"model":"${'m'.repeat(300)}"}`],
  runIdNull: ['/v1/window', `{"messages":[${u}],"run_ids":[null]}`],
  ctxWin: ['/v1/window', `{"messages":[${u}],"context_window":1e20}`],
  textplain: ['/v1/window', `{"messages":[${u}]}`, { 'content-type': 'text/plain' }],
  octet: ['/v1/window', `{"messages":[${u}]}`, { 'content-type': 'application/octet-stream' }],
  form: ['/v1/window', `a=b`, { 'content-type': 'application/x-www-form-urlencoded' }],
  ctJsonBad: ['/v1/window', `{"messages":[${u}]}`, { 'content-type': 'application/jsonx' }],
  utf16: ['/v1/window', `{"messages":[${u}]}`, { 'content-type': 'application/json; charset=utf-16' }],
  bom: ['/v1/window', `\ufeff{"messages":[${u}]}`],
  trailing: ['/v1/window', `{"messages":[${u}]} x`],
  dupKey: ['/v1/window', `{"messages":[${u}],"messages":"x"}`],
  nul: ['/v1/window', `null`],
  num: ['/v1/window', `42`],
  str: ['/v1/window', `"hello"`],
  protoNested: [
    '/v1/window',
    `{"messages":[{"role":"user","content":[{"type":"text","text":"x","__proto__":{"polluted":true}}]}]}`,
  ],
  protoUnicode: ['/v1/window', `{"messages":[${u}],"\\u005f_proto__":{"polluted":true}}`],
  ctorUnicode: ['/v1/window', `{"messages":[${u}],"constructor":{"\\u0070rototype":{"polluted":true}}}`],
  anthAlt: ['/v1/window', `{"messages":[${u},${a},${a}],"format":"anthropic"}`],
  dupResult: [
    '/v1/window',
    `{"messages":[${u},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a"},{"role":"tool","tool_call_id":"c1","content":"b"}]}`,
  ],
  ambiguous: [
    '/v1/window',
    `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x"}}]}]}`,
  ],
  zeroTrig: ['/v1/window', `{"messages":[${u}],"trigger":{"fraction":0}}`],
};

t.test('probe', async (t) => {
  const app = await build(t);
  for (const [name, [url, payload, headers]] of Object.entries(probes)) {
    const r = await app.inject({ method: 'POST', url, payload, headers: headers ?? { 'content-type': 'application/json' } });
    console.log(name, r.statusCode, r.headers['content-type'], r.body.slice(0, 260));
  }
  console.log('polluted', ({} as Record<string, unknown>).polluted);
  const app0 = await build(t, { COMPACTOR_TOKEN_CACHE_ENTRIES: '0' });
  for (const [name, payload] of Object.entries({
    nocacheDeepW: `{"messages":[{"role":"user","content":"x","meta":${deep(100000)}}]}`,
    nocacheDeepW2: `{"messages":[${u},{"role":"assistant","content":"x","meta":${deep(5000)}}, ${u}, ${a}],"keep":{"messages":1}}`,
  })) {
    const r = await app0.inject({ method: 'POST', url: '/v1/window', payload, headers: { 'content-type': 'application/json' } });
    console.log(name, r.statusCode, r.headers['content-type'], r.body.slice(0, 260));
  }
});
