/**
 * One short coding-agent session, written once as OpenAI Chat Completions messages: the user
 * asks for a failing test to be fixed; the agent reads a file, runs the tests, searches, edits and
 * runs them again (five tool exchanges, the first three with long results), answers, and the user
 * asks for more. `histories.ts` renders it in the other wire formats.
 */

const lines = (...text: string[]): string => text.join('\n');

export const SYSTEM_PROMPT =
  'You are a coding agent working in the repository at /workspace/shop. Use the tools to read, search, edit and test the code. Keep changes minimal and run the tests before you answer.';

const TASK = 'The test "cart total applies the discount once" fails since yesterday. Find out why and fix it.';

const CART_TS = lines(
  "import { type Discount, discountFor } from './discounts.js';",
  "import { roundCents } from './money.js';",
  '',
  'export interface Line {',
  '  sku: string;',
  '  unitPrice: number;',
  '  quantity: number;',
  '}',
  '',
  'export interface Cart {',
  '  lines: Line[];',
  '  discountCode?: string;',
  '}',
  '',
  '/** Sum of the lines before any discount, in cents. */',
  'export function subtotal(cart: Cart): number {',
  '  return cart.lines.reduce((sum, line) => sum + line.unitPrice * line.quantity, 0);',
  '}',
  '',
  '/** What the customer pays: the subtotal, the discount applied to each line, rounded to the cent. */',
  'export function total(cart: Cart): number {',
  '  const discount: Discount | undefined = cart.discountCode ? discountFor(cart.discountCode) : undefined;',
  '  let sum = subtotal(cart);',
  '  for (const line of cart.lines) {',
  '    if (!discount) continue;',
  '    const lineTotal = line.unitPrice * line.quantity;',
  '    sum -= discount.kind === "percent" ? (lineTotal * discount.value) / 100 : discount.value;',
  '  }',
  '  if (discount?.kind === "percent") sum -= (subtotal(cart) * discount.value) / 100;',
  '  return roundCents(Math.max(sum, 0));',
  '}',
  '',
  '/** Lines with a quantity of zero are removed; the rest keep their order. */',
  'export function normalize(cart: Cart): Cart {',
  '  return { ...cart, lines: cart.lines.filter((line) => line.quantity > 0) };',
  '}',
);

const FAILING_RUN = lines(
  '> shop@1.4.2 test',
  '> vitest run',
  '',
  ' RUN  v2.1.8 /workspace/shop',
  '',
  ' ✓ test/money.test.ts (6 tests) 4ms',
  ' ✓ test/discounts.test.ts (9 tests) 7ms',
  ' ❯ test/cart.test.ts (8 tests | 1 failed) 12ms',
  '   ✓ cart > subtotal sums the lines',
  '   ✓ cart > subtotal of an empty cart is 0',
  '   ✓ cart > total without a discount code is the subtotal',
  '   × cart > total applies the discount once',
  '   ✓ cart > total never goes below zero',
  '   ✓ cart > fixed discounts apply per line',
  '   ✓ cart > normalize drops empty lines',
  '   ✓ cart > normalize keeps the order',
  '',
  '⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯',
  '',
  ' FAIL  test/cart.test.ts > cart > total applies the discount once',
  'AssertionError: expected 8000 to be 9000 // Object.is equality',
  '',
  '- Expected',
  '+ Received',
  '',
  '- 9000',
  '+ 8000',
  '',
  ' ❯ test/cart.test.ts:41:32',
  '     39|   it("total applies the discount once", () => {',
  '     40|     const cart = { lines: [{ sku: "A-1", unitPrice: 5000, quantity: 2 }], discountCode: "TEN" };',
  '     41|     expect(total(cart)).toBe(9000);',
  '       |                                ^',
  '     42|   });',
  '',
  ' Test Files  1 failed | 2 passed (3)',
  '      Tests  1 failed | 22 passed (23)',
  '   Duration  412ms',
);

const GREP = lines(
  'src/cart.ts:22:  const discount: Discount | undefined = cart.discountCode ? discountFor(cart.discountCode) : undefined;',
  'src/cart.ts:27:    sum -= discount.kind === "percent" ? (lineTotal * discount.value) / 100 : discount.value;',
  'src/cart.ts:29:  if (discount?.kind === "percent") sum -= (subtotal(cart) * discount.value) / 100;',
  'src/discounts.ts:8:export function discountFor(code: string): Discount | undefined {',
  'test/cart.test.ts:40:    const cart = { lines: [{ sku: "A-1", unitPrice: 5000, quantity: 2 }], discountCode: "TEN" };',
  'CHANGELOG.md:12:- cart: percent discounts are applied to the subtotal (#214)',
);

const PASSING_RUN = lines(
  ' ✓ test/money.test.ts (6 tests) 4ms',
  ' ✓ test/discounts.test.ts (9 tests) 6ms',
  ' ✓ test/cart.test.ts (8 tests) 9ms',
  '',
  ' Test Files  3 passed (3)',
  '      Tests  23 passed (23)',
);

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
});
const result = (id: string, content: string) => ({ role: 'tool', tool_call_id: id, content });

/** The session as an OpenAI Chat Completions history (14 messages, the system prompt first). */
export const CHAT_SESSION: readonly Record<string, unknown>[] = [
  { role: 'system', content: SYSTEM_PROMPT },
  { role: 'user', content: TASK },
  call('call_read_1', 'read_file', { path: 'src/cart.ts' }),
  result('call_read_1', CART_TS),
  call('call_test_1', 'run_tests', { command: 'npm test' }),
  result('call_test_1', FAILING_RUN),
  call('call_grep_1', 'grep', { pattern: 'discount', path: '.' }),
  result('call_grep_1', GREP),
  call('call_edit_1', 'edit_file', {
    path: 'src/cart.ts',
    old: '  if (discount?.kind === "percent") sum -= (subtotal(cart) * discount.value) / 100;\n',
    new: '',
  }),
  result('call_edit_1', 'Applied 1 edit to src/cart.ts (1 line removed).'),
  call('call_test_2', 'run_tests', { command: 'npm test' }),
  result('call_test_2', PASSING_RUN),
  {
    role: 'assistant',
    content:
      'Fixed. `total()` in src/cart.ts applied a percent discount twice: once per line in the loop and again to the subtotal (a line added with #214). I removed the second application; all 23 tests pass.',
  },
  { role: 'user', content: 'Thanks. Now add a test for a cart whose discount code is unknown.' },
];

/** What an OpenAI Chat agent's last call reported: its prompt (messages 0-11) and the answer (message 12). */
export const CHAT_USAGE = { prompt_tokens: 1100, completion_tokens: 49, total_tokens: 1149, messages_covered: 13 };
