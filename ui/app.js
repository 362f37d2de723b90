// The conversations page: plain DOM, no build step, no third-party code. Every value from the API
// is put in the page as text (textContent), never as markup.
import { timeline } from './timeline.js';

const KEY = 'compactor.key';
const $ = (id) => document.getElementById(id);
const status = (text) => {
  $('status').textContent = text;
};

/** Creates an element with text or children. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'class') node.className = value;
    else if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function api(path) {
  const key = sessionStorage.getItem(KEY);
  const headers = key ? { authorization: `Bearer ${key}` } : {};
  const res = await fetch(path, { headers });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const why = res.status === 401 ? 'enter a valid API key above' : body.detail || body.title || `HTTP ${res.status}`;
    throw new Error(why);
  }
  return body;
}

const int = new Intl.NumberFormat('en');
const tokens = (n) => (n === null || n === undefined ? '–' : int.format(n));
function money(v, unit) {
  if (v === null || v === undefined) return '–';
  const digits = Math.abs(v) >= 1 ? 2 : Math.abs(v) >= 0.01 ? 4 : 6;
  return unit === 'USD' ? `$${v.toFixed(digits)}` : unit === 'relative' ? v.toFixed(digits) : `${v.toFixed(digits)} ${unit}`;
}
const when = (iso) => new Date(iso).toLocaleString();
const spend = (cost) => (cost ? `${money(cost.usd, cost.unit)} / ${money(cost.straight_usd, cost.unit)}` : '–');

function bypasses(totals) {
  const entries = Object.entries(totals.bypasses);
  return entries.length ? entries.map(([reason, n]) => `${reason} ×${n}`).join(', ') : 'none';
}

let nextCursor = null;

async function showList(append) {
  $('detail').hidden = true;
  $('list').hidden = false;
  status('Loading conversations…');
  const query = append && nextCursor ? `?cursor=${encodeURIComponent(nextCursor)}` : '';
  const page = await api(`/v1/conversations${query}`);
  const rows = $('list-rows');
  if (!append) rows.replaceChildren();
  for (const c of page.conversations) {
    const link = el('a', { href: `#/c/${encodeURIComponent(c.id)}`, text: c.id });
    rows.append(
      el(
        'tr',
        {},
        el('th', { scope: 'row' }, link),
        el('td', { text: when(c.last_at) }),
        el('td', { text: `${c.provider} · ${c.model ?? 'unknown model'}` }),
        el('td', { class: 'num', text: tokens(c.totals.calls) }),
        el('td', { class: 'num', text: tokens(c.totals.tokens_saved) }),
        el('td', { class: 'num', text: spend(c.totals.cost) }),
        el('td', { class: 'num', text: tokens(c.totals.prefix_breaks) }),
        el('td', { text: bypasses(c.totals) }),
      ),
    );
  }
  nextCursor = page.next_cursor;
  $('more').hidden = nextCursor === null;
  const n = rows.children.length;
  status(n === 0 ? 'No conversation recorded for this key yet.' : `${n} conversation${n === 1 ? '' : 's'}.`);
}

/** Never below zero (the API's definition); calls that cost more than straight so far say by how much. */
function avoidedValue(cost) {
  const over = cost.usd - cost.straight_usd;
  if (over <= 0) return money(cost.avoided, cost.unit);
  return el(
    'span',
    {},
    'none',
    el('span', { class: 'reason block', text: `${money(over, cost.unit)} more than straight so far` }),
  );
}

function totalsList(d) {
  const t = d.totals;
  const unit = t.cost && t.cost.unit !== 'USD' ? ` (${t.cost.unit})` : '';
  const items = [
    ['Calls', tokens(t.calls)],
    ['Tokens saved', tokens(t.tokens_saved)],
    [`Spend${unit}`, t.cost ? money(t.cost.usd, t.cost.unit) : '–'],
    [`Straight${unit}`, t.cost ? money(t.cost.straight_usd, t.cost.unit) : '–'],
    [`Avoided${unit}`, t.cost ? avoidedValue(t.cost) : '–'],
    ['Prefix breaks', tokens(t.prefix_breaks)],
    ['Bypasses', bypasses(t)],
  ];
  const dd = (v) => (typeof v === 'string' ? el('dd', { text: v }) : el('dd', {}, v));
  $('totals').replaceChildren(...items.flatMap(([k, v]) => [el('div', {}, el('dt', { text: k }), dd(v))]));
}

function refButton(id, label, title) {
  const b = el('button', { type: 'button', class: 'ref', 'data-artifact': id, title, text: label });
  b.addEventListener('click', () => openArtifact(id, title));
  return b;
}

const size = (n) => (n === null || n === undefined ? '' : `, ${tokens(n)} tokens`);

function refs(call) {
  const cell = el('td', { class: 'refs' });
  for (const s of call.summaries) {
    const by = s.summarizer ? ` (${s.summarizer})` : '';
    if (s.text_id) cell.append(refButton(s.text_id, 'summary text', `the summary at message ${s.message_index}${by}`));
    // A compaction answered from a prepared summary may name a range that is not an artifact.
    if (s.id.startsWith('art_')) {
      cell.append(
        refButton(
          s.id,
          `range (${s.covered_messages} msgs)`,
          `the ${s.covered_messages} messages the summary stands for: ${s.id}`,
        ),
      );
    }
  }
  const originals = call.artifacts.map((a) =>
    refButton(
      a.id,
      `#${a.message_index} ${a.tool_name ?? a.kind}`,
      `${a.kind} of message ${a.message_index}${size(a.tokens)}: ${a.id}`,
    ),
  );
  if (originals.length > 0 && originals.length <= 3) cell.append(...originals);
  else if (originals.length > 3) {
    const kinds = {};
    for (const a of call.artifacts) kinds[a.kind] = (kinds[a.kind] ?? 0) + 1;
    const label = Object.entries(kinds)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
    cell.append(el('details', {}, el('summary', { text: label }), el('div', { class: 'ref-list' }, ...originals)));
  }
  if (!cell.children.length) cell.textContent = '–';
  return cell;
}

function bill(cost) {
  if (!cost) return el('td', { class: 'num', text: '–' });
  return el(
    'td',
    {
      class: 'num',
      title: cost.source === 'usage' ? "priced from the provider's usage" : "fit's estimate of the call's input bill",
    },
    el('div', { text: money(cost.usd, cost.unit) }),
    el('div', { class: 'reason', text: `straight ${money(cost.straight_usd, cost.unit)}` }),
  );
}

function callRow(c, i) {
  const outcome = el('span', { class: `badge ${c.outcome}`, text: c.outcome });
  const cell = el('td', {}, outcome);
  if (c.reason) cell.append(el('div', { class: 'reason', text: c.reason }));
  const prefix = c.prefix.kept ? 'kept' : c.prefix.broken_at === null ? 'broken' : `broken at #${c.prefix.broken_at}`;
  return el(
    'tr',
    { id: `call-${i + 1}`, 'data-outcome': c.outcome },
    el('th', { scope: 'row', class: 'num', text: String(i + 1) }),
    el('td', { class: 'nowrap', title: when(c.at), text: new Date(c.at).toLocaleTimeString() }),
    cell,
    el(
      'td',
      { class: 'num' },
      el('div', { text: `${tokens(c.tokens.client)} → ${tokens(c.tokens.forwarded)}` }),
      el('div', { class: 'reason', text: c.tokens.window === null ? 'window unknown' : `window ${tokens(c.tokens.window)}` }),
    ),
    el('td', { class: c.prefix.kept ? 'nowrap' : 'nowrap broken', text: prefix }),
    el('td', { class: 'num', text: `${tokens(c.cache.read)} / ${tokens(c.cache.write)}` }),
    bill(c.cost),
    el('td', { class: 'num', text: `${c.ms_before_forwarding.toFixed(1)} ms` }),
    refs(c),
  );
}

async function showDetail(id) {
  $('list').hidden = true;
  $('detail').hidden = false;
  status('Loading the conversation…');
  for (const id of ['totals', 'timeline', 'call-rows']) $(id).replaceChildren();
  $('detail-title').textContent = 'Conversation';
  const d = await api(`/v1/conversations/${encodeURIComponent(id)}`);
  $('detail-title').textContent = `${d.id} · ${d.provider} · ${d.model ?? 'unknown model'}`;
  totalsList(d);
  $('timeline').replaceChildren(timeline(d.calls));
  $('call-rows').replaceChildren(...d.calls.map(callRow));
  status(`${d.calls.length} call${d.calls.length === 1 ? '' : 's'}${d.truncated ? ' (the newest ones only)' : ''}.`);
}

let opener = null;
async function openArtifact(id, title) {
  opener = document.activeElement;
  const dialog = $('viewer');
  $('viewer-title').textContent = title.startsWith('the summary at') ? 'Summary text' : 'Original';
  $('viewer-meta').textContent = id;
  $('viewer-body').textContent = 'Loading…';
  dialog.showModal();
  try {
    const a = await api(`/v1/artifacts/${encodeURIComponent(id)}`);
    $('viewer-meta').textContent = `${a.id} · ${a.kind}${a.tool_name ? ` · ${a.tool_name}` : ''} · expires ${when(a.expires_at)}`;
    $('viewer-body').textContent = typeof a.content === 'string' ? a.content : JSON.stringify(a.content, null, 2);
  } catch (error) {
    $('viewer-body').textContent = `Cannot show it: ${error.message}`;
  }
}

async function route() {
  const match = /^#\/c\/(.+)$/.exec(location.hash);
  try {
    if (match) await showDetail(decodeURIComponent(match[1]));
    else await showList(false);
  } catch (error) {
    status(`Cannot load: ${error.message}`);
  }
}

function init() {
  $('key').value = sessionStorage.getItem(KEY) ?? '';
  $('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = $('key').value.trim();
    if (key) sessionStorage.setItem(KEY, key);
    else sessionStorage.removeItem(KEY);
    route();
  });
  $('forget').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    $('key').value = '';
    route();
  });
  $('more').addEventListener('click', () => showList(true).catch((error) => status(`Cannot load: ${error.message}`)));
  $('viewer-close').addEventListener('click', () => $('viewer').close());
  $('viewer').addEventListener('close', () => opener?.focus());
  window.addEventListener('hashchange', route);
  route();
}

init();
