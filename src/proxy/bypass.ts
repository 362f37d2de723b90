/**
 * Every reason a model call goes upstream as it came (`x-compactor: bypass; reason=…`), the one
 * list the handler, the metrics, the logs and docs/proxy.md's table read (a docs test checks the
 * table against it). Each comes with what to do about it.
 */
export const BYPASS_REASONS = {
  client: 'the client sent `x-compactor-bypass: 1`: remove the header to have the call reduced',
  too_large: 'the body is over `COMPACTOR_BODY_LIMIT`: raise it if such histories are expected',
  load: 'the service had no room under `COMPACTOR_MAX_INFLIGHT_BYTES` for the body (forwarded unread): raise the bound or add replicas',
  not_json: 'the body is not a JSON object: the provider will answer the client',
  no_history: 'the body has no history to reduce (no `messages`, `input` or `contents`): nothing to do',
  previous_response_id:
    'a Responses call continuing a conversation the provider keeps (the history is not in the request): send the history (`store: false`) to have it reduced',
  options: '`x-compactor-options` is not a JSON object of fit options: fix the header',
  budget:
    'the reduction took longer than `COMPACTOR_PROXY_BUDGET_MS`: the previous reduction extended went instead; raise the budget or the workers if it happens often',
  store: 'the store could not be read or written: check `COMPACTOR_STORE_URL` and the store',
  history_malformed: 'the history is not valid for its format: the provider will most likely refuse it too',
  history_structure:
    'the history breaks its format’s structure rules (a tool result without its call): the provider will most likely refuse it too',
  format_undetected: 'the history’s format could not be told: report it with the agent’s name and version',
  format_mixed: 'the history mixes formats: report it with the agent’s name and version',
  options_invalid:
    '`COMPACTOR_PROXY_OPTIONS` or `x-compactor-options` hold options fit refuses for this call (a target larger than the window): fix them',
  request_validation: 'a field of the body is not what fit accepts: report it with the agent’s name and version',
  request_too_deep: 'the body nests deeper than the service reads: nothing to do; the call goes as it came',
  request_too_many_messages: 'more messages than `COMPACTOR_MAX_MESSAGES`: raise it if such histories are expected',
  overloaded: 'the service is saturated (worker pool or event loop): add replicas or workers',
  summarizer: 'the summarizer failed where a summary was forced: check `COMPACTOR_SUMMARIZER_*` and the summarizer',
  internal: 'a fault of Compactor’s own: report it with the log line (it holds a code, never content)',
} as const;

export type BypassReason = keyof typeof BYPASS_REASONS;

/** Whether `text` is one of the reasons. */
export const isBypassReason = (text: string): text is BypassReason => Object.hasOwn(BYPASS_REASONS, text);
