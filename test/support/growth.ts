/** CPU milliseconds (user + system) of one call: CPU, not wall time, since the machine is shared. */
async function cpuMs(pass: () => unknown, reps: number): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < reps; i++) await pass();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

export interface Growth {
  /** Minimum CPU ms over `runs` runs at n, 2n, 4n (as far as measured). */
  times: number[];
  /** t(4n) / t(n); Infinity when a size was not measured because it exceeded the cap. */
  ratio: number;
  /** How many calls one measurement makes (so that the time at n is measurable above noise). */
  reps: number;
}

export interface GrowthOptions {
  /** Calls per measurement are raised until the time at n reaches this (default 8 ms). */
  floorMs?: number;
  /** Runs per size; the minimum counts (default 3). */
  runs?: number;
  /** A run longer than this is taken alone, without the other runs (default 150 ms). */
  preciseMs?: number;
  /**
   * A measurement past this stops the check (default 3,000 ms, on the machine these figures come
   * from; scaled by `slowdown()` elsewhere): a linear pass takes at most a few hundred milliseconds
   * there, and a quadratic one would take minutes at the next sizes.
   */
  capMs?: number;
}

/** CPU ms of `reference()` on the 2-core machine the caps above were set on (Xeon, Node 20). */
const REFERENCE_MS = 40;

/** A fixed linear workload over text: scanning, splitting, joining and JSON, as the passes do. */
function reference(): number {
  const text = 'The fixture path changed; 修复测试 — see log.\n'.repeat(20_000);
  let sum = 0;
  for (let i = 0; i < text.length; i++) sum = (sum + text.charCodeAt(i)) | 0;
  const lines = text.split('\n');
  return sum + JSON.stringify(lines).length + lines.join(' ').replace(/\s+/g, ' ').length;
}

let measuredSlowdown: number | undefined;
/**
 * How many times slower than the reference machine this one is now (at least 1), in CPU time: the
 * minimum of several runs of `reference()`. The caps grow with it, so a 10 times slower machine
 * still measures every size; the ratios, taken within one run, need no scaling.
 */
export async function slowdown(): Promise<number> {
  if (measuredSlowdown === undefined) {
    reference();
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 5; i++) best = Math.min(best, await cpuMs(reference, 1));
    measuredSlowdown = Math.max(1, best / REFERENCE_MS);
  }
  return measuredSlowdown;
}

/**
 * How the CPU time of `pass` grows over `inputs`, of sizes n, 2n and 4n. Linear gives a ratio near
 * 4, quadratic near 16. A pass cheap enough to be lost in noise is repeated until the time at n
 * reaches `floorMs`, with the same repetitions at every size.
 */
export async function growth<T>(
  inputs: readonly [T, T, T],
  pass: (input: T) => unknown,
  options: GrowthOptions = {},
): Promise<Growth> {
  const { floorMs = 8, runs = 3, preciseMs = 150 } = options;
  const capMs = (options.capMs ?? 3000) * (await slowdown());
  const first = inputs[0];
  // A first call compiles the pass: not measured.
  await pass(first);
  let reps = 1;
  let t = await cpuMs(() => pass(first), reps);
  if (t > capMs) return { times: [t], ratio: Number.POSITIVE_INFINITY, reps };
  while (t < floorMs && reps < 1 << 16) {
    reps = t <= 0.05 ? reps * 32 : Math.ceil((reps * floorMs * 1.5) / t);
    t = await cpuMs(() => pass(first), reps);
  }
  const times: number[] = [];
  for (const input of inputs) {
    let best = Number.POSITIVE_INFINITY;
    for (let r = 0; r < runs; r++) {
      const run = await cpuMs(() => pass(input), reps);
      best = Math.min(best, run);
      // One run this long is precise enough: the noise of a shared machine is a few milliseconds.
      if (run > preciseMs) break;
    }
    times.push(best);
    if (best > capMs) break;
  }
  const ratio = times.length === 3 ? (times[2] as number) / (times[0] as number) : Number.POSITIVE_INFINITY;
  return { times, ratio, reps };
}

/**
 * `growth`, measured up to `attempts` times while its ratio is not under `bound`, each size keeping
 * its fastest time over the attempts: one run taken alone can catch a pause of a loaded machine,
 * while a quadratic pass is slow every time.
 */
export async function growthUnder<T>(
  bound: number,
  inputs: readonly [T, T, T],
  pass: (input: T) => unknown,
  options: GrowthOptions & { attempts?: number } = {},
): Promise<Growth> {
  let g = await growth(inputs, pass, options);
  for (let attempt = 1; attempt < (options.attempts ?? 3) && !(g.ratio < bound); attempt++) {
    const again = await growth(inputs, pass, options);
    if (again.reps !== g.reps || again.times.length !== 3 || g.times.length !== 3) {
      g = again.ratio < g.ratio ? again : g;
      continue;
    }
    const times = g.times.map((ms, i) => Math.min(ms, again.times[i] as number));
    g = { times, reps: g.reps, ratio: (times[2] as number) / (times[0] as number) };
  }
  return g;
}
