/** One server-sent event as a reader sees it. */
export interface SseEvent {
  /** The `event:` field; undefined when the frame had none (the reader's default, `message`). */
  event: string | undefined;
  data: string;
}

/**
 * One SSE frame: an optional `event:` line, the data split into `data:` lines (a newline inside
 * `data` becomes a second line, as the spec requires), and the blank line that ends the event.
 */
export function sseFrame(data: string, event?: string): string {
  const head = event === undefined ? '' : `event: ${event}\n`;
  return `${head}${data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;
}

/** An SSE frame whose data is `value` as JSON (with `event:` when given). */
export function sseJson(value: unknown, event?: string): string {
  return sseFrame(JSON.stringify(value), event);
}

/**
 * Parses an SSE stream's text into its events, as the WHATWG event-stream rules read it: lines end
 * with CRLF, LF or CR; a blank line dispatches; `data` lines join with `\n`; comment lines (`:`)
 * and fields other than `event` and `data` are ignored; one space after the colon is dropped; an
 * event with no data line is not dispatched; an unterminated last event is dropped.
 */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  let event: string | undefined;
  let data: string[] | undefined;
  const lines = text.split(/\r\n|\r|\n/);
  // The text after the last line break is an unfinished line: never part of a dispatched event.
  lines.pop();
  for (const line of lines) {
    if (line === '') {
      if (data !== undefined) events.push({ event, data: data.join('\n') });
      event = undefined;
      data = undefined;
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data = [...(data ?? []), value];
  }
  return events;
}
