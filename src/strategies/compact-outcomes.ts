import { ByTag } from '../tokens/by-tag.js';

/**
 * What replacing one tool result of a message that came in tagged came to (issue 40's "compaction
 * outcome per rule"): the placeholder text signed for its call, and the tag of the message the
 * edit made. An agent sends the same prefix on every call and compaction replaces the same old
 * results the same way each time; the MAC over the text, and the edited message's tag (a SHA-256
 * over the edit's JSON, what its token count and any range over it are found by), are then found
 * here instead of being made again.
 */
export interface Outcome {
  readonly signed: string;
  readonly tag: string;
}

/**
 * Outcomes by the tag of the message edited (`by-tag.ts`: found by the tag itself), each under its
 * selector (`outcomeSelector`). 16 MiB per thread, least recently used out by halves: about 10,000
 * placeholders of the usual size.
 */
const outcomes = new ByTag<Outcome>(16 * 1024 * 1024, (o) => o.signed.length + o.tag.length, 96);

/**
 * Everything an outcome is a function of, besides the message edited (its tag) when nothing else
 * was edited in it before: the signer's key (`Markers.name`: a caller never finds another's), the
 * format, the result's slot, the call it is signed for (`Binding`), the action and artifact the
 * edit records, and the placeholder text before signing (which holds the artifact id, the tokens,
 * the tool's template filled in and the recall hint). Equal selectors over one tag sign the same
 * text for the same call and make the same edit, so the same message and tag.
 */
export function outcomeSelector(
  signer: string,
  format: string,
  slot: number,
  binding: string,
  action: string,
  id: string | null,
  text: string,
): string {
  return `${signer}\0${format}\0${slot}\0${action}\0${id ?? ''}\0${binding}\0${text}`;
}

/** The outcome kept for `selector` over the message tagged `tag`, if any. */
export function knownOutcome(tag: string, selector: string): Outcome | undefined {
  return outcomes.get(tag, selector);
}

/** Keeps an outcome for the next call over the same message. */
export function keepOutcome(tag: string, selector: string, outcome: Outcome): void {
  outcomes.set(tag, selector, outcome);
}
