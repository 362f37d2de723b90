import type { IncomingHttpHeaders } from 'node:http';

/** Headers that carry credentials: never printed. */
const SECRET_HEADERS = /^(authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key|cookie|x-compactor-key)$/i;

/** A copy of request headers safe to print: credential headers replaced by `<redacted>`. */
export function redactHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = SECRET_HEADERS.test(name) ? '<redacted>' : Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** A URL safe to print: a `key` query parameter (Gemini's API key) replaced by `<redacted>`. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]key=)[^&]*/gi, '$1<redacted>');
}

/** `text` with every occurrence of each secret replaced by `<redacted>` (secrets shorter than 8 characters are left: too likely to hit ordinary text). */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 8) out = out.split(secret).join('<redacted>');
  return out;
}
