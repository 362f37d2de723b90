import { TRAIL_HEADING } from '../../history/vocabulary.js';
import { CLAUDE_CODE_SECTIONS } from './recognize.js';

/**
 * The text an instant compaction answer holds, per agent: the task in the user's words, Compactor's
 * prepared summary (its sections, its artifact trail), then the deterministic digest of what came
 * after the summarized range, then where the summarized range can be read back. Pure and linear.
 */

/** What the answer is made from. */
export interface PreparedCompaction {
  /** The prepared summary: Markdown with Compactor's `## ` sections, its artifact trail last. */
  summary: string;
  /** The artifact holding the summarized range, or null (`store: none`). */
  artifactId: string | null;
  /** A deterministic digest of the request's messages after the range (its trail, the user's words); empty when none. */
  after: string;
  /** The task block (after.ts `taskBlock`): the user's words of the turn kept before the range; empty or absent when none. */
  task?: string;
  /** Whether the request offers Compactor's `recall` tool (the pointer names it only then). */
  recallTool: boolean;
}

/** Compactor's summary sections (summarizers/prompts.ts) mapped to Claude Code's numbered ones. */
const CLAUDE_CODE_MAP: Readonly<Record<string, string>> = {
  'Goal and constraints': 'Primary Request and Intent',
  Decisions: 'Key Technical Concepts',
  'Done and found': 'Files and Code Sections',
  'Failed attempts': 'Errors and fixes',
  'Remaining work': 'Pending Tasks',
  'Current state': 'Current Work',
};

/** A summary split at its `## ` headings: the text before the first, then each section's body. One pass. */
export function summarySections(summary: string): { lead: string; sections: { title: string; body: string }[] } {
  const lead: string[] = [];
  const open: { title: string; lines: string[] }[] = [];
  let current = lead;
  for (const line of summary.split('\n')) {
    const heading = /^## (.{1,200})$/.exec(line);
    if (!heading) {
      current.push(line);
      continue;
    }
    current = [];
    open.push({ title: (heading[1] ?? '').trim(), lines: current });
  }
  return { lead: lead.join('\n').trim(), sections: open.map((s) => ({ title: s.title, body: s.lines.join('\n').trim() })) };
}

/** Where the summarized range is read back, naming the `recall` tool only when the request offers it. */
export function recallPointer(id: string | null, recallTool: boolean): string {
  if (!id) return 'The summarized messages were not kept (store: none).';
  return recallTool
    ? `The messages this summary stands for: call the \`recall\` tool with ${id}.`
    : `The messages this summary stands for are Compactor's artifact ${id} (\`recall\` or \`expand\` gives them back).`;
}

function afterBlock(after: string): string[] {
  return after.trim() ? ['## After the summarized range', after.trim()] : [];
}

/**
 * Claude Code's form: an `<analysis>` line, then a `<summary>` block with the numbered sections its
 * prompt asks for where Compactor's map onto them (goal, decisions, files, errors, pending work,
 * current state), in its order; the sections that do not map (and a lead before the first
 * heading), Compactor's artifact trail, the digest of what came after and the recall pointer
 * follow inside the same block.
 */
export function claudeCodeSummaryText(p: PreparedCompaction): string {
  const { lead, sections } = summarySections(p.summary);
  const mapped = new Map<string, string>();
  const rest: string[] = lead ? [lead] : [];
  const trail: string[] = [];
  for (const s of sections) {
    const target = CLAUDE_CODE_MAP[s.title];
    if (`## ${s.title}` === TRAIL_HEADING) trail.push(`## ${s.title}`, s.body);
    else if (target) mapped.set(target, mapped.has(target) ? `${mapped.get(target)}\n${s.body}` : s.body);
    else rest.push(`## ${s.title}`, s.body);
  }
  // The task first, in the user's words, where Claude Code asks for the primary request.
  const task = p.task?.trim();
  if (task) {
    const first = CLAUDE_CODE_SECTIONS[0] as string;
    mapped.set(first, mapped.has(first) ? `${task}\n${mapped.get(first)}` : task);
  }
  const numbered: string[] = [];
  CLAUDE_CODE_SECTIONS.forEach((title, i) => {
    const body = mapped.get(title);
    if (body !== undefined) numbered.push(`${i + 1}. ${title}:`, body || '(none)', '');
  });
  const lines = [
    '<analysis>',
    "Written by Compactor from the summary it prepared of this conversation (no model call): the sections below map Compactor's summary onto the ones asked for.",
    '</analysis>',
    '',
    '<summary>',
    ...numbered,
    ...rest,
    ...trail,
    ...afterBlock(p.after),
    '',
    recallPointer(p.artifactId, p.recallTool),
    '</summary>',
  ];
  return lines.join('\n');
}

/** Codex's form (an assistant message, or what a sealed `compaction` item stands for): the task, the summary as written, then the digest and the pointer. */
export function codexSummaryText(p: PreparedCompaction): string {
  const task = p.task?.trim();
  return [
    ...(task ? [task, ''] : []),
    p.summary.trim(),
    ...afterBlock(p.after),
    '',
    recallPointer(p.artifactId, p.recallTool),
  ].join('\n');
}
