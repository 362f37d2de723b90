// The sample histories of the README: one coding-agent run (two tasks, fifteen tool calls: a
// directory listing, source files, a failing and a passing test run, a grep, edits and a diff),
// written in each of the four wire formats as a request body ({format, model, system?, messages}).
// Deterministic: the same bytes every time. Run `node examples/histories/make.mjs` to write them;
// test/unit/sample-histories.test.ts fails when the committed files differ from what this writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SYSTEM =
  'You are a coding agent working in the repository at /repo. Use the tools to read, search, edit and ' +
  'run code. Keep the public API unchanged unless asked, and run the tests before you finish.';

const MODULES = ['orders', 'pricing', 'stock', 'customers', 'shipping', 'invoices'];

/** A Python module of `n` small functions, varied by name so no two lines repeat exactly. */
function pythonModule(name, n) {
  const lines = [`"""${name}: part of the inventory service."""`, 'from decimal import Decimal', ''];
  for (let i = 0; i < n; i++) {
    const fn = `${name}_${['load', 'save', 'check', 'total', 'format', 'merge', 'split', 'round'][i % 8]}_${i}`;
    lines.push(
      `def ${fn}(record, quantity=1, rate=Decimal("0.${(i % 9) + 1}")):`,
      `    """Return the ${['net', 'gross', 'taxed', 'rounded'][i % 4]} value of a ${name} record (${i})."""`,
      `    if quantity < 0:`,
      `        raise ValueError("quantity must not be negative: %r" % quantity)`,
      `    base = Decimal(record["price_cents"]) * quantity / 100`,
      `    return (base * (1 + rate)).quantize(Decimal("0.01"))`,
      '',
    );
  }
  return lines.join('\n');
}

const PRICING = `${pythonModule('pricing', 10)}
def apply_discount(order, percent):
    """Apply a percentage discount to every line of an order."""
    for line in order.lines:
        line.price_cents = line.price_cents * (100 - percent) // 100
    return order
`;

function listing() {
  const out = ['/repo:', 'README.md', 'pyproject.toml', 'src', 'tests', '', '/repo/src/inventory:', '__init__.py'];
  for (const m of MODULES) out.push(`${m}.py`);
  out.push('', '/repo/tests:', 'conftest.py');
  for (const m of MODULES) out.push(`test_${m}.py`);
  return out.join('\n');
}

function pytest(failing) {
  const out = [
    '============================= test session starts ==============================',
    'platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0',
    'rootdir: /repo',
    'configfile: pyproject.toml',
    `collected ${MODULES.length * 12} items`,
    '',
  ];
  for (const m of MODULES) {
    const marks = Array.from({ length: 12 }, (_, i) => (failing && m === 'orders' && i === 7 ? 'F' : '.')).join('');
    out.push(`tests/test_${m}.py ${marks}${' '.repeat(40 - m.length)}[${String(MODULES.indexOf(m) * 16 + 16).padStart(3)}%]`);
  }
  if (failing) {
    out.push(
      '',
      '=================================== FAILURES ===================================',
      '_________________________ test_discount_keeps_cents __________________________',
      '',
      '    def test_discount_keeps_cents():',
      '        order = make_order([("widget", 999, 3)])',
      '        apply_discount(order, 15)',
      '>       assert order.lines[0].price_cents == 849',
      'E       assert 848 == 849',
      'E        +  where 848 = Line(sku="widget", price_cents=848, quantity=3).price_cents',
      '',
      'tests/test_orders.py:88: AssertionError',
      '=========================== short test summary info ============================',
      'FAILED tests/test_orders.py::test_discount_keeps_cents - assert 848 == 849',
      `========================= 1 failed, ${MODULES.length * 12 - 1} passed in 1.84s =========================`,
    );
  } else out.push('', `============================= ${MODULES.length * 12} passed in 1.79s ==============================`);
  return out.join('\n');
}

function tests(name, n) {
  const lines = [`from inventory.${name} import *`, 'from decimal import Decimal', 'import pytest', ''];
  for (let i = 0; i < n; i++) {
    lines.push(
      `def test_${name}_${i}():`,
      `    record = {"price_cents": ${100 + i * 37}}`,
      `    assert ${name}_total_${i}(record, quantity=${(i % 4) + 1}) > 0`,
      '',
    );
  }
  lines.push(
    'def test_discount_keeps_cents():',
    '    order = make_order([("widget", 999, 3)])',
    '    apply_discount(order, 15)',
    '    assert order.lines[0].price_cents == 849',
    '',
  );
  return lines.join('\n');
}

const grep = MODULES.map((m, i) => `src/inventory/${m}.py:${12 + i * 7}:    total = apply_discount(order, percent)`)
  .concat([
    'tests/test_orders.py:86:    apply_discount(order, 15)',
    'src/inventory/pricing.py:71:def apply_discount(order, percent):',
  ])
  .join('\n');

const DIFF = `diff --git a/src/inventory/pricing.py b/src/inventory/pricing.py
index 3f2a9c1..7b4d0e2 100644
--- a/src/inventory/pricing.py
+++ b/src/inventory/pricing.py
@@ -71,5 +71,5 @@ def apply_discount(order, percent):
     """Apply a percentage discount to every line of an order."""
     for line in order.lines:
-        line.price_cents = line.price_cents * (100 - percent) // 100
+        line.price_cents = round(line.price_cents * (100 - percent) / 100)
     return order`;

/**
 * The run, format-free: a list of turns, each {user} or {say?, calls?: [{id, name, args, result}]}; it
 * ends with a user message, as a history does just before the next model call.
 */
export function run() {
  let n = 0;
  const call = (name, args, result) => ({ id: `call_${String(++n).padStart(2, '0')}`, name, args, result });
  return [
    { user: 'The test suite fails on tests/test_orders.py. Find the cause and fix it; keep the public API unchanged.' },
    {
      say: 'I will look at the layout of the repository first.',
      calls: [call('bash', { command: 'ls -R /repo | head -40' }, listing())],
    },
    { say: 'Running the tests to see the failure.', calls: [call('bash', { command: 'python -m pytest -q' }, pytest(true))] },
    { calls: [call('read_file', { path: 'tests/test_orders.py' }, tests('orders', 16))] },
    { calls: [call('read_file', { path: 'src/inventory/orders.py' }, pythonModule('orders', 16))] },
    {
      say: 'The failing assertion is about a discount; finding where it is applied.',
      calls: [call('bash', { command: 'grep -rn "apply_discount" src tests' }, grep)],
    },
    { calls: [call('read_file', { path: 'src/inventory/pricing.py' }, PRICING)] },
    {
      say: 'Floor division truncates 849.15 to 848 cents; the discount should round to the nearest cent.',
      calls: [
        call(
          'edit_file',
          {
            path: 'src/inventory/pricing.py',
            old: 'line.price_cents * (100 - percent) // 100',
            new: 'round(line.price_cents * (100 - percent) / 100)',
          },
          'The file src/inventory/pricing.py has been edited: 1 line changed.',
        ),
      ],
    },
    { calls: [call('bash', { command: 'python -m pytest -q' }, pytest(false))] },
    { calls: [call('bash', { command: 'git diff' }, DIFF)] },
    {
      say: 'Fixed: `apply_discount` in src/inventory/pricing.py rounded down with floor division (849.15 became 848 cents); it now rounds to the nearest cent. All 72 tests pass.',
    },
    { user: 'Thanks. Also add a test that a negative quantity raises ValueError in the stock module.' },
    { calls: [call('read_file', { path: 'src/inventory/stock.py' }, pythonModule('stock', 14))] },
    { calls: [call('read_file', { path: 'tests/test_stock.py' }, tests('stock', 14))] },
    {
      calls: [
        call(
          'edit_file',
          {
            path: 'tests/test_stock.py',
            append:
              'def test_negative_quantity_raises():\n    with pytest.raises(ValueError):\n        stock_total_3({"price_cents": 100}, quantity=-1)\n',
          },
          'The file tests/test_stock.py has been edited: 4 lines added.',
        ),
      ],
    },
    {
      calls: [call('bash', { command: 'python -m pytest -q tests/test_stock.py' }, '.............. [100%]\n15 passed in 0.41s')],
    },
    { say: 'Added tests/test_stock.py::test_negative_quantity_raises; it passes with the other 14 stock tests.' },
    { user: 'Good. Now run the linter (ruff check src tests) and fix what it reports.' },
  ];
}

function openaiChat(turns) {
  const messages = [{ role: 'system', content: SYSTEM }];
  for (const t of turns) {
    if (t.user) messages.push({ role: 'user', content: t.user });
    else {
      const calls = (t.calls ?? []).map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.name, arguments: JSON.stringify(c.args) },
      }));
      messages.push({ role: 'assistant', content: t.say ?? null, ...(calls.length ? { tool_calls: calls } : {}) });
      for (const c of t.calls ?? []) messages.push({ role: 'tool', tool_call_id: c.id, content: c.result });
    }
  }
  return { format: 'openai-chat', model: 'gpt-4o', messages };
}

function anthropic(turns) {
  const messages = [];
  let pending = [];
  for (const t of turns) {
    if (t.user) {
      messages.push({ role: 'user', content: [...pending, { type: 'text', text: t.user }] });
      pending = [];
      continue;
    }
    if (pending.length) messages.push({ role: 'user', content: pending });
    pending = [];
    const content = [];
    if (t.say) content.push({ type: 'text', text: t.say });
    for (const c of t.calls ?? []) {
      content.push({ type: 'tool_use', id: c.id.replace('call_', 'toolu_'), name: c.name, input: c.args });
      pending.push({ type: 'tool_result', tool_use_id: c.id.replace('call_', 'toolu_'), content: c.result });
    }
    messages.push({ role: 'assistant', content });
  }
  if (pending.length) messages.push({ role: 'user', content: pending });
  return { format: 'anthropic', model: 'claude-sonnet-4-5', system: SYSTEM, messages };
}

function responses(turns) {
  const messages = [{ type: 'message', role: 'developer', content: [{ type: 'input_text', text: SYSTEM }] }];
  for (const t of turns) {
    if (t.user) messages.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: t.user }] });
    else {
      const id = `msg_${String(messages.length).padStart(4, '0')}`;
      if (t.say)
        messages.push({
          type: 'message',
          id,
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: t.say, annotations: [], logprobs: [] }],
        });
      for (const c of t.calls ?? [])
        messages.push({ type: 'function_call', call_id: c.id, name: c.name, arguments: JSON.stringify(c.args) });
      for (const c of t.calls ?? []) messages.push({ type: 'function_call_output', call_id: c.id, output: c.result });
    }
  }
  return { format: 'openai-responses', model: 'gpt-5', messages };
}

function gemini(turns) {
  const messages = [];
  const push = (role, parts) => {
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else messages.push({ role, parts });
  };
  for (const t of turns) {
    if (t.user) push('user', [{ text: t.user }]);
    else {
      push('model', [
        ...(t.say ? [{ text: t.say }] : []),
        ...(t.calls ?? []).map((c) => ({ functionCall: { name: c.name, args: c.args } })),
      ]);
      const answers = (t.calls ?? []).map((c) => ({ functionResponse: { name: c.name, response: { output: c.result } } }));
      if (answers.length) push('user', answers);
    }
  }
  return { format: 'gemini', model: 'gemini-2.5-pro', system: { parts: [{ text: SYSTEM }] }, messages };
}

/** Every sample as [file name, request body]. */
export function samples() {
  const turns = run();
  return [
    ['openai-chat.json', openaiChat(turns)],
    ['anthropic.json', anthropic(turns)],
    ['openai-responses.json', responses(turns)],
    ['gemini.json', gemini(turns)],
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [file, body] of samples()) {
    writeFileSync(new URL(file, import.meta.url), `${JSON.stringify(body, null, 1)}\n`);
    console.log(`wrote examples/histories/${file} (${body.messages.length} messages)`);
  }
}
