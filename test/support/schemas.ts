import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { FUTURE_TYPE } from './histories.js';

/**
 * The providers' own published request descriptions of one message, as JSON Schemas generated from
 * their SDKs' type definitions by scripts/provider-schemas.mjs (versions in versions.json beside them).
 */
export const SCHEMA_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures/schemas');
export const SCHEMA_FILES: Readonly<Record<string, string>> = {
  'openai-chat': 'openai-chat-message.schema.json',
  anthropic: 'anthropic-message.schema.json',
  'openai-responses': 'openai-responses-input-item.schema.json',
  gemini: 'gemini-content.schema.json',
};

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const cache = new Map<string, ValidateFunction>();

/** A validator of one message of `format` against its provider's schema. */
export function providerSchema(format: string): ValidateFunction {
  const hit = cache.get(format);
  if (hit) return hit;
  const file = SCHEMA_FILES[format];
  if (!file) throw new Error(`no provider schema for ${format}`);
  const ajv = new Ajv2020({ allErrors: true, strictRequired: false, strict: false });
  addFormats(ajv);
  const validate = ajv.compile(JSON.parse(readFileSync(resolve(SCHEMA_DIR, file), 'utf8')));
  cache.set(format, validate);
  return validate;
}

/**
 * Errors of every message that its provider's schema rejects (empty when all are valid). A message
 * holding a type of the future (`FUTURE_TYPE` of the generated histories) is one no published
 * schema can know: it is not checked.
 */
export function schemaErrors(format: string, messages: readonly unknown[]): string[] {
  const validate = providerSchema(format);
  const out: string[] = [];
  messages.forEach((m, i) => {
    if (JSON.stringify(m).includes(FUTURE_TYPE)) return;
    if (!validate(m)) out.push(`messages[${i}]: ${JSON.stringify(validate.errors?.slice(0, 2))}`);
  });
  return out;
}
