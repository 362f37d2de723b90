// The timeline: one inline SVG, per call the tokens the client had against the tokens sent and the
// context window (breaks of the cached prefix marked), and under it the cumulative spend against
// the same calls straight. The calls table below it carries the same numbers for screen readers.

const NS = 'http://www.w3.org/2000/svg';
const W = 1000;
const TOP = { y: 28, h: 190 };
const COST = { y: 292, h: 110 };
const LEFT = 76;
const RIGHT = 16;
const HEIGHT = 420;
const int = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function describe(c, i) {
  const prefix = c.prefix.kept
    ? 'prefix kept'
    : c.prefix.broken_at === null
      ? 'prefix broken'
      : `prefix broken at message ${c.prefix.broken_at}`;
  const reason = c.reason ? ` (${c.reason})` : '';
  return `Call ${i + 1}: ${c.outcome}${reason}; ${c.tokens.client} tokens → ${c.tokens.forwarded} sent; ${prefix}`;
}

function axis(root, y, h, max, format, label) {
  for (const f of [0, 0.5, 1]) {
    const yy = y + h - f * h;
    root.append(svg('line', { x1: LEFT, x2: W - RIGHT, y1: yy, y2: yy, class: 'gridline' }));
    root.append(svg('text', { x: LEFT - 8, y: yy + 4, class: 'tick', 'text-anchor': 'end' }, format(max * f)));
  }
  root.append(svg('text', { x: LEFT, y: y - 10, class: 'axis-label' }, label));
}

function tokenBars(root, calls, slot) {
  const clientMax = Math.max(1, ...calls.map((c) => c.tokens.client));
  const windows = calls.map((c) => c.tokens.window).filter((w) => w !== null);
  const window = windows.length ? Math.max(...windows) : null;
  const max = window !== null && window <= clientMax * 1.5 ? Math.max(window, clientMax) * 1.05 : clientMax * 1.1;
  axis(root, TOP.y, TOP.h, max, (v) => int.format(v), 'tokens per call');
  const y = (v) => TOP.y + TOP.h - (Math.min(v, max) / max) * TOP.h;
  if (window !== null) {
    const off = window > max;
    const wy = off ? TOP.y : y(window);
    root.append(svg('line', { x1: LEFT, x2: W - RIGHT, y1: wy, y2: wy, class: 'window' }));
    const text = off ? `context window ${int.format(window)} (above the scale)` : `context window ${int.format(window)}`;
    root.append(svg('text', { x: W - RIGHT, y: wy - 4, class: 'tick', 'text-anchor': 'end' }, text));
  }
  calls.forEach((c, i) => {
    const x = LEFT + i * slot;
    const g = svg('g', { class: `call ${c.outcome}`, 'data-outcome': c.outcome, tabindex: 0, 'aria-label': describe(c, i) });
    g.append(svg('title', {}, describe(c, i)));
    const bw = Math.max(2, slot * 0.7);
    const bx = x + (slot - bw) / 2;
    g.append(
      svg('rect', { x: bx, y: y(c.tokens.client), width: bw, height: TOP.y + TOP.h - y(c.tokens.client), class: 'client' }),
    );
    const sw = Math.max(1.5, bw * 0.55);
    g.append(
      svg('rect', {
        x: x + (slot - sw) / 2,
        y: y(c.tokens.forwarded),
        width: sw,
        height: TOP.y + TOP.h - y(c.tokens.forwarded),
        class: 'sent',
      }),
    );
    if (!c.prefix.kept) {
      g.append(svg('line', { x1: x + slot / 2, x2: x + slot / 2, y1: TOP.y, y2: TOP.y + TOP.h, class: 'break' }));
      const cx = x + slot / 2;
      g.append(svg('path', { d: `M${cx - 6},${TOP.y - 2} L${cx + 6},${TOP.y - 2} L${cx},${TOP.y + 8} Z`, class: 'break-mark' }));
    }
    const oy = TOP.y + TOP.h + 8;
    g.append(svg('rect', { x: x + slot / 2 - 5, y: oy, width: 10, height: 10, rx: 2, class: `outcome ${c.outcome}` }));
    if (calls.length <= 40 || i % Math.ceil(calls.length / 40) === 0) {
      g.append(svg('text', { x: x + slot / 2, y: oy + 24, class: 'tick', 'text-anchor': 'middle' }, String(i + 1)));
    }
    root.append(g);
  });
}

function costLines(root, calls, slot) {
  let usd = 0;
  let straight = 0;
  const points = calls.map((c) => {
    if (c.cost) {
      usd += c.cost.usd;
      straight += c.cost.straight_usd;
    }
    return [usd, straight];
  });
  const unit = calls.find((c) => c.cost)?.cost.unit ?? 'USD';
  const max = Math.max(1e-9, ...points.flat()) * 1.1;
  const money = (v) => (unit === 'USD' ? `$${v < 1 ? v.toFixed(3) : v.toFixed(2)}` : v.toFixed(3));
  axis(root, COST.y, COST.h, max, money, `cumulative spend (${unit})`);
  const at = (i, v) => `${LEFT + i * slot + slot / 2},${COST.y + COST.h - (v / max) * COST.h}`;
  root.append(svg('polyline', { points: points.map((p, i) => at(i, p[1])).join(' '), class: 'straight' }));
  root.append(svg('polyline', { points: points.map((p, i) => at(i, p[0])).join(' '), class: 'cost' }));
  const last = points[points.length - 1] ?? [0, 0];
  const x = LEFT + (calls.length - 1) * slot + slot / 2;
  root.append(
    svg(
      'text',
      { x: Math.min(x, W - RIGHT), y: COST.y - 2, class: 'tick', 'text-anchor': 'end' },
      `${money(last[0])} vs ${money(last[1])} straight`,
    ),
  );
}

/** The timeline of a conversation's calls, as an SVG element that scales to its container's width. */
export function timeline(calls) {
  const breaks = calls.filter((c) => !c.prefix.kept).length;
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${HEIGHT}`,
    role: 'group',
    'aria-label': `Timeline of ${calls.length} calls, ${breaks} prefix break${breaks === 1 ? '' : 's'}`,
  });
  const slot = (W - LEFT - RIGHT) / Math.max(1, calls.length);
  tokenBars(root, calls, slot);
  costLines(root, calls, slot);
  return root;
}
