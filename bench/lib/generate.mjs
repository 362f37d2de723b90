/**
 * Deterministic synthetic agent histories in OpenAI Chat Completions format: a system prompt, a
 * user task, then assistant messages with one tool call each and the tool's result (source
 * listings, logs, test runs, grep hits, diffs, directory listings), built from a seeded PRNG so
 * the same seed always gives the same bytes. Text is varied (identifiers, numbers, paths, hashes
 * and prose drawn at random) so the tokenizer sees realistic, mostly uncached material.
 */

/** mulberry32: a small, fast, seedable 32-bit PRNG. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = `the a an of to in for on with by from at as is are was be been it this that these those we you they
request response header content length body session adapter connection pool retry timeout proxy cookie
cache token message history window budget parser encoder decoder stream buffer chunk offset index key value
config option default setting flag environment variable path file directory module package import export
function method class instance object array string number boolean null undefined error exception warning
test case fixture assert expected actual result output input argument parameter return yield async await
server client socket port host address route handler middleware plugin hook event listener callback promise
database query transaction migration schema table column row record field model view controller template
build compile bundle deploy release version tag branch commit merge rebase diff patch hunk line character
user account permission role group policy token secret credential login logout auth signature verify check
because however therefore although instead otherwise meanwhile finally first then next after before while
need should could would might must can will may want try look find see run call read write open close fix
change update remove delete add create make move copy rename replace keep drop skip handle raise catch throw
simple small large empty missing broken invalid valid correct wrong different same other new old current
previous next last first only still already again also just even because since until unless whether`
  .split(/\s+/)
  .filter(Boolean);

const IDENT_PARTS = `get set is has to from parse build make load save read write send recv handle process update
request response header body content length session adapter conn pool retry timeout proxy cookie cache
token message history window budget stream buffer chunk offset index key value config option default
user account item order price total count size limit max min start end first last next prev node tree
list map dict queue stack set pair entry record field column row table schema model view event hook
url uri path file dir name type kind mode state status code flag err error result data payload meta`
  .split(/\s+/)
  .filter(Boolean);

const DIRS = ['src', 'lib', 'tests', 'pkg', 'core', 'utils', 'api', 'models', 'server', 'client', 'internal', 'docs', 'scripts'];
const EXTS = ['.py', '.ts', '.js', '.go', '.rs', '.java', '.rb', '.md', '.json', '.yaml', '.cfg'];
const LEVELS = ['DEBUG', 'INFO', 'INFO', 'INFO', 'WARNING', 'ERROR'];
const TOOLS = ['bash', 'read_file', 'edit_file', 'search_code', 'run_tests'];
const PY_TYPES = ['str', 'int', 'bool', 'float', 'bytes', 'dict', 'list', 'Optional[str]', 'Mapping[str, Any]'];
const EXCEPTIONS = ['ValueError', 'KeyError', 'TypeError', 'AttributeError', 'RuntimeError', 'ConnectionError', 'TimeoutError'];

function makeRand(seed) {
  const r = prng(seed);
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const hex = (n) => {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[Math.floor(r() * 16)];
    return s;
  };
  const snake = (k = int(1, 3)) => Array.from({ length: k }, () => pick(IDENT_PARTS)).join('_');
  const camel = (k = int(1, 3)) =>
    Array.from({ length: k }, (_, i) => {
      const w = pick(IDENT_PARTS);
      return i === 0 ? w : w[0].toUpperCase() + w.slice(1);
    }).join('');
  const pascal = () => {
    const c = camel(int(1, 3));
    return c[0].toUpperCase() + c.slice(1);
  };
  const sentence = (lo = 6, hi = 18) => {
    const n = int(lo, hi);
    const ws = Array.from({ length: n }, () => (r() < 0.12 ? `\`${r() < 0.5 ? snake() : camel()}\`` : pick(WORDS)));
    const s = ws.join(' ');
    return `${s[0].toUpperCase()}${s.slice(1)}${pick(['.', '.', '.', ':', '?'])}`;
  };
  const path = () => `${Array.from({ length: int(1, 3) }, () => pick(DIRS)).join('/')}/${snake(int(1, 2))}${pick(EXTS)}`;
  return { r, int, pick, hex, snake, camel, pascal, sentence, path };
}

function pythonSource(g, lines) {
  const out = [];
  let n = 1;
  const push = (s) => out.push(`${String(n++).padStart(5)}\t${s}`);
  push(`import ${g.snake(1)}`);
  push(`from ${g.snake(1)}.${g.snake(1)} import ${g.pascal()}, ${g.snake()}`);
  push('');
  while (out.length < lines) {
    if (g.r() < 0.3) {
      push(`class ${g.pascal()}(${g.pascal()}):`);
      push(`    """${g.sentence()}"""`);
      push(`    ${g.snake()}: ${g.pick(PY_TYPES)} = ${g.pick(['None', '0', "''", 'True', `${g.int(1, 4096)}`])}`);
      push('');
    }
    const args = Array.from({ length: g.int(0, 4) }, () => `${g.snake()}: ${g.pick(PY_TYPES)}`);
    push(`    def ${g.snake()}(self${args.length ? ', ' : ''}${args.join(', ')}):`);
    push(`        """${g.sentence()}`);
    push('');
    push(`        ${g.sentence()}`);
    push('        """');
    for (let k = g.int(2, 9); k > 0; k--) {
      const x = g.r();
      if (x < 0.25) {
        push(`        if ${g.snake()} is None:`);
        push(`            ${g.snake()} = self.${g.snake()}.get(${JSON.stringify(g.snake())}, ${g.int(0, 100)})`);
      } else if (x < 0.45) push(`        ${g.snake()} = ${g.snake()}(${g.snake()}, ${g.snake()}=${g.snake()})`);
      else if (x < 0.6) push(`        for ${g.snake(1)} in self.${g.snake()}:`);
      else if (x < 0.7) push(`            raise ${g.pick(EXCEPTIONS)}(f"${g.sentence(3, 8)} {${g.snake(1)}!r}")`);
      else if (x < 0.8) push(`        # ${g.sentence()}`);
      else if (x < 0.9) push(`        self.${g.snake()}[${JSON.stringify(g.snake(1))}] = len(${g.snake()}) + ${g.int(1, 64)}`);
      else push(`        return ${g.snake()}`);
    }
    push('');
  }
  return out.join('\n');
}

function tsSource(g, lines) {
  const out = [];
  out.push(`import { ${g.camel()}, ${g.pascal()} } from './${g.snake(1)}.js';`);
  out.push('');
  while (out.length < lines) {
    out.push(`/** ${g.sentence()} */`);
    const params = Array.from(
      { length: g.int(0, 3) },
      () => `${g.camel()}: ${g.pick(['string', 'number', 'boolean', g.pascal()])}`,
    );
    out.push(`export function ${g.camel()}(${params.join(', ')}): ${g.pick(['void', 'number', 'string', g.pascal()])} {`);
    for (let k = g.int(2, 8); k > 0; k--) {
      const x = g.r();
      if (x < 0.3) out.push(`  const ${g.camel()} = ${g.camel()}.${g.camel()}(${g.camel()}, ${g.int(0, 999)});`);
      else if (x < 0.5) out.push(`  if (!${g.camel()}) throw new Error('${g.sentence(3, 8)}');`);
      else if (x < 0.65) out.push(`  for (const ${g.camel(1)} of ${g.camel()}) ${g.camel()}.push(${g.camel(1)});`);
      else if (x < 0.8) out.push(`  // ${g.sentence()}`);
      else out.push(`  return ${g.camel()} ?? ${g.int(0, 10)};`);
    }
    out.push('}');
    out.push('');
  }
  return out.join('\n');
}

function logLines(g, lines) {
  const out = [];
  let t = Date.UTC(2025, g.int(0, 11), g.int(1, 28), g.int(0, 23), g.int(0, 59)) + g.int(0, 59_999);
  for (let i = 0; i < lines; i++) {
    t += g.int(1, 4000);
    const ts = new Date(t).toISOString();
    const x = g.r();
    if (x < 0.5) {
      out.push(`${ts} ${g.pick(LEVELS).padEnd(7)} [${g.snake(1)}.${g.snake(1)}] ${g.sentence(4, 12)} id=${g.hex(8)}`);
    } else if (x < 0.7) {
      out.push(
        `${ts} INFO    ${g.pick(['GET', 'POST', 'PUT', 'DELETE'])} /${g.snake(1)}/${g.int(1, 99999)}/${g.snake(1)} ${g.pick([200, 200, 201, 204, 301, 400, 404, 500])} ${g.int(1, 2500)}ms ${g.int(100, 99999)}B`,
      );
    } else if (x < 0.85) {
      out.push(`${ts} DEBUG   ${g.snake()}=${g.int(0, 1e6)} ${g.snake()}=${g.r().toFixed(4)} ${g.snake()}="${g.camel()}"`);
    } else {
      out.push(`${ts} ERROR   ${g.pick(EXCEPTIONS)}: ${g.sentence(4, 10)}`);
      out.push('Traceback (most recent call last):');
      for (let k = g.int(2, 5); k > 0; k--) {
        out.push(`  File "/app/${g.path()}", line ${g.int(1, 2000)}, in ${g.snake()}`);
        out.push(`    ${g.snake()} = ${g.snake()}(${g.snake()})`);
      }
    }
  }
  return out.join('\n');
}

function testRun(g, lines) {
  const out = [`============================= test session starts ==============================`];
  out.push(`platform linux -- Python 3.${g.int(8, 12)}.${g.int(0, 9)}, pytest-${g.int(6, 8)}.${g.int(0, 4)}.${g.int(0, 3)}`);
  out.push(`collected ${g.int(10, 900)} items`);
  out.push('');
  let failed = 0;
  while (out.length < lines - 4) {
    const ok = g.r() < 0.85;
    if (!ok) failed++;
    out.push(`tests/test_${g.snake()}.py::test_${g.snake()}[${g.snake(1)}-${g.int(0, 64)}] ${ok ? 'PASSED' : 'FAILED'}`);
    if (!ok && g.r() < 0.5) {
      out.push(`E       AssertionError: assert ${g.int(0, 1000)} == ${g.int(0, 1000)}`);
      out.push(`E        +  where ${g.int(0, 1000)} = <${g.pascal()} object at 0x7f${g.hex(10)}>.${g.snake()}`);
    }
  }
  out.push(`=========== ${failed} failed, ${g.int(10, 900)} passed in ${(g.r() * 60).toFixed(2)}s ===========`);
  return out.join('\n');
}

function grepHits(g, lines) {
  const out = [];
  for (let i = 0; i < lines; i++)
    out.push(`${g.path()}:${g.int(1, 3000)}:    ${g.snake()} = ${g.snake()}.${g.snake()}(${g.snake()})`);
  return out.join('\n');
}

function diff(g, lines) {
  const p = g.path();
  const out = [`diff --git a/${p} b/${p}`, `index ${g.hex(7)}..${g.hex(7)} 100644`, `--- a/${p}`, `+++ b/${p}`];
  while (out.length < lines) {
    const at = g.int(1, 2000);
    out.push(`@@ -${at},${g.int(3, 12)} +${at},${g.int(3, 12)} @@ def ${g.snake()}(self):`);
    for (let k = g.int(3, 10); k > 0; k--) {
      const sign = g.pick([' ', ' ', '-', '+']);
      out.push(`${sign}        ${g.snake()} = ${g.snake()}(${g.snake()}, ${g.int(0, 99)})`);
    }
  }
  return out.join('\n');
}

function listing(g, lines) {
  const out = [`total ${g.int(8, 4000)}`];
  for (let i = 0; i < lines; i++) {
    const dir = g.r() < 0.2;
    out.push(
      `${dir ? 'drwxr-xr-x' : '-rw-r--r--'} ${g.int(1, 9)} root root ${String(g.int(0, 999999)).padStart(7)} ${g.pick(['Jan', 'Mar', 'Jun', 'Sep', 'Nov'])} ${String(g.int(1, 28)).padStart(2)} ${String(g.int(0, 23)).padStart(2, '0')}:${String(g.int(0, 59)).padStart(2, '0')} ${dir ? g.snake(1) : `${g.snake(g.int(1, 2))}${g.pick(EXTS)}`}`,
    );
  }
  return out.join('\n');
}

const OUTPUTS = [pythonSource, pythonSource, tsSource, logLines, logLines, testRun, grepHits, diff, listing];

/** A tool-output size in lines: mostly short, a long tail (like real agent runs). */
function outputLines(g, scale) {
  const x = g.r();
  const base = x < 0.35 ? g.int(4, 25) : x < 0.75 ? g.int(25, 90) : x < 0.95 ? g.int(90, 260) : g.int(260, 700);
  return Math.max(2, Math.round(base * scale));
}

function toolCall(g, tool) {
  switch (tool) {
    case 'bash':
      return {
        command: g.pick([
          `grep -rn "${g.snake()}" ${g.pick(DIRS)}/ | head -${g.int(10, 80)}`,
          `cat ${g.path()}`,
          `python -m pytest tests/test_${g.snake()}.py -x -q`,
          `sed -n '${g.int(1, 400)},${g.int(401, 900)}p' ${g.path()}`,
          `ls -la ${g.pick(DIRS)}/${g.snake(1)}`,
          `git diff HEAD~${g.int(1, 5)} -- ${g.path()}`,
          `tail -n ${g.int(50, 500)} /var/log/${g.snake(1)}.log`,
        ]),
      };
    case 'read_file':
      return { path: g.path(), start_line: g.int(1, 300), end_line: g.int(301, 900) };
    case 'edit_file':
      return {
        path: g.path(),
        old_str: `${g.snake()} = ${g.snake()}(${g.snake()})`,
        new_str: `${g.snake()} = ${g.snake()}(${g.snake()}, ${g.snake()}=True)`,
      };
    case 'search_code':
      return { query: `${g.snake()} ${g.camel()}`, max_results: g.int(5, 50) };
    default:
      return { target: `tests/test_${g.snake()}.py::${g.pascal()}`, verbose: g.r() < 0.5 };
  }
}

function systemPrompt(g) {
  const rules = Array.from({ length: 24 }, (_, i) => `${i + 1}. ${g.sentence(10, 24)}`);
  return `You are a software engineering agent working in a sandboxed repository. You can call the tools ${TOOLS.join(', ')}.\n\n## Rules\n${rules.join('\n')}\n\n## Output\nExplain your reasoning in a short THOUGHT section, then call exactly one tool.`;
}

function userTask(g) {
  const paras = Array.from({ length: 5 }, () => Array.from({ length: g.int(3, 6) }, () => g.sentence()).join(' '));
  return `<issue>\n${paras.join('\n\n')}\n\nSteps to reproduce:\n\n\`\`\`python\n${pythonSource(g, 14)}\n\`\`\`\n</issue>\n\nFix the issue in the repository so that the new behaviour is covered by tests.`;
}

/**
 * Generates a history: system, user task, then `pairs` (assistant tool call, tool result) pairs.
 * Default sizes give 2,000 messages and about 1,000,000 o200k tokens (about 3.9 MB of JSON).
 * @param {{ seed?: number, pairs?: number, scale?: number }} [options]
 */
export function generateHistory({ seed = 42, pairs = 999, scale = 0.455 } = {}) {
  const g = makeRand(seed);
  const messages = [
    { role: 'system', content: systemPrompt(g) },
    { role: 'user', content: userTask(g) },
  ];
  for (let i = 0; i < pairs; i++) {
    const tool = g.pick(TOOLS);
    const id = `call_${g.hex(24)}`;
    const thought = Array.from({ length: g.int(1, 4) }, () => g.sentence()).join(' ');
    messages.push({
      role: 'assistant',
      content: `THOUGHT: ${thought}`,
      tool_calls: [{ id, type: 'function', function: { name: tool, arguments: JSON.stringify(toolCall(g, tool)) } }],
    });
    const body = g.pick(OUTPUTS)(g, outputLines(g, scale));
    const content = tool === 'bash' ? `<returncode>${g.r() < 0.85 ? 0 : 1}</returncode>\n<output>\n${body}\n</output>` : body;
    messages.push({ role: 'tool', tool_call_id: id, content });
  }
  return messages;
}

/** One extra assistant message (no tool call) to append to a history: the agent's next step. */
export function nextAssistantMessage(seed) {
  const g = makeRand(seed);
  return { role: 'assistant', content: `THOUGHT: ${Array.from({ length: 3 }, () => g.sentence()).join(' ')}` };
}

/**
 * A copy of `messages` in which every message differs from the original (so a per-message count
 * cache misses on all of them) while its shape and size stay the same: string contents get a
 * short `[salt]` prefix, and messages without string content get salted tool-call ids (their
 * results follow).
 */
export function salted(messages, salt) {
  const ids = new Map();
  return messages.map((m) => {
    const out = { ...m };
    if (typeof m.content === 'string') out.content = `[${salt}] ${m.content}`;
    else if (Array.isArray(m.tool_calls)) {
      out.tool_calls = m.tool_calls.map((c) => {
        const id = `${c.id}_${salt}`;
        ids.set(c.id, id);
        return { ...c, id };
      });
    }
    if (typeof m.tool_call_id === 'string' && ids.has(m.tool_call_id)) out.tool_call_id = ids.get(m.tool_call_id);
    return out;
  });
}
