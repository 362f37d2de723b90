import { z } from 'zod';

/** A conversation's id: the proxy's conversation key, or the `conversation_id` a `/v1/fit` call names. */
export const CONVERSATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request field that names a conversation (fit): its calls are recorded for `GET /v1/conversations/{id}` and `/ui`. */
export const ConversationIdField = z
  .string()
  .regex(CONVERSATION_ID, 'letters, digits, `.`, `_`, `:` or `-`, at most 128')
  .describe(
    'records this call in the conversation of this id, for `GET /v1/conversations/{id}` and `/ui` (counts, ids and bills, no content; your own choice of id, scoped to your key)',
  );
