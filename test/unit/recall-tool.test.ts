import t from 'tap';
import { deferredRecallTool, RECALL_TOOL_NAME, recallToolOf } from '../../src/history/recall-tool.js';

const anthropic = (name: string) => ({ name, description: 'd', input_schema: { type: 'object' } });
const chat = (name: string) => ({ type: 'function', function: { name, parameters: {} } });
const responses = (name: string) => ({ type: 'function', name, parameters: {} });
const gemini = (...names: string[]) => ({ functionDeclarations: names.map((name) => ({ name })) });

t.test('each agent form of the recall tool is found, in every format', async (t) => {
  t.equal(recallToolOf([anthropic('Bash'), anthropic('mcp__compactor__recall')]), 'mcp__compactor__recall', 'Claude Code');
  t.equal(recallToolOf([responses('exec_command'), responses('compactor__recall')]), 'compactor__recall', 'Codex');
  t.equal(recallToolOf([chat('bash'), chat('compactor_recall')]), 'compactor_recall', 'opencode');
  t.equal(recallToolOf([chat('my_compactor_recall')]), 'my_compactor_recall', 'opencode, a server name sanitized to underscores');
  t.equal(recallToolOf([gemini('run', 'recall')]), 'recall', 'an SDK app, Gemini declarations');
  t.equal(recallToolOf([chat('recall')]), 'recall', 'the plain name');
});

t.test('the best form wins, whatever the order', async (t) => {
  t.equal(recallToolOf([chat('x_recall'), chat('mcp__compactor__recall'), chat('recall')]), 'recall');
  t.equal(recallToolOf([chat('x_recall'), chat('mcp__compactor__recall')]), 'mcp__compactor__recall');
});

t.test('no recall tool: undefined (hints name the artifact plainly)', async (t) => {
  t.equal(recallToolOf(undefined), undefined);
  t.equal(recallToolOf([]), undefined);
  for (const name of ['recall_memory', 'Recall', 'recall2', 'my.recall', 'x recall', '__recall'])
    t.equal(recallToolOf([chat(name)]), undefined, name);
  t.equal(recallToolOf(['recall', null, 42, { name: 7 }]), undefined, 'malformed tools are not names');
});

t.test("Codex's additional_tools item in the history declares tools too", async (t) => {
  const history = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'x' }] },
    { type: 'additional_tools', tools: [responses('exec'), responses('compactor__recall')] },
  ];
  t.equal(recallToolOf([responses('exec')], history), 'compactor__recall');
  t.equal(recallToolOf(undefined, [{ type: 'message', tools: [responses('recall')] }]), undefined, 'only additional_tools items');
});

t.test('a name given to hints is safe inside a marker line', async (t) => {
  for (const ok of ['recall', 'mcp__compactor__recall', 'a.b:c-d']) t.ok(RECALL_TOOL_NAME.test(ok), ok);
  for (const bad of ['', 'a`b', 'a\nb', 'a b', 'x'.repeat(65)]) t.notOk(RECALL_TOOL_NAME.test(bad), JSON.stringify(bad));
});

t.test('a deferred recall tool, named in the instructions, counts as offered', async (t) => {
  const claude =
    'Use ToolSearch with query "select:<name>" to load tool schemas before calling them:\nCronCreate\nWebFetch\nmcp__compactor__recall\nmcp__compactor__search\n';
  t.equal(deferredRecallTool(['You are Claude Code.', claude]), 'mcp__compactor__recall', "Claude Code's deferred list");
  const codex =
    '<tools>\nDeferred tool namespaces:\n- mcp__compactor\n- multi_agent_v1: Tools for spawning sub-agents.\n</tools>';
  t.equal(deferredRecallTool([codex]), 'recall', "Codex's deferred namespace: the tool inside is recall");
  t.equal(deferredRecallTool(['- mcp__github\n- mcp__slack']), undefined, 'another server');
  t.equal(deferredRecallTool(['please recall mcp__compactor__recall later']), undefined, 'a mention inside a sentence');
  t.equal(deferredRecallTool(['recall']), undefined, 'a bare word is no deferred tool');
  t.equal(deferredRecallTool([]), undefined);
});
