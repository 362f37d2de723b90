/** Reading V8 .cpuprofile files (node --cpu-prof) for the profile scripts. */

/** The parent of every node, by child id. */
function parents(p) {
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return parent;
}

/** A function's name, file (node_modules and dist shortened) and line. */
function frameKey(n) {
  const f = n.callFrame;
  const url = f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/dist\//, 'dist/');
  return `${f.functionName || '(anonymous)'} ${url}${url ? `:${f.lineNumber + 1}` : ''}`;
}

/**
 * Self and inclusive time per function (name, file, line), from the time each sampled node was
 * seen (`selfOf`: node id → µs); a function counts once per stack even when it recurses.
 */
export function fold(p, selfOf) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = parents(p);
  const self = new Map();
  const incl = new Map();
  for (const [id, us] of selfOf) {
    const k = frameKey(byId.get(id));
    self.set(k, (self.get(k) ?? 0) + us);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const ck = frameKey(byId.get(cur));
      if (!seen.has(ck)) {
        seen.add(ck);
        incl.set(ck, (incl.get(ck) ?? 0) + us);
      }
    }
  }
  return { self, incl };
}

/** The n heaviest entries, as "ms/request" lines, leaving out the frames `skip` matches. */
export function top(map, n, requests, skip) {
  return [...map]
    .filter(([k]) => !skip.test(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `  ${(us / 1000 / requests).toFixed(2).padStart(8)} ms/request  ${k}`)
    .join('\n');
}
