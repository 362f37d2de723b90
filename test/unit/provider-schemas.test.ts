import t from 'tap';
import { schemaErrors } from '../support/schemas.js';

/**
 * What the provider schemas (test/fixtures/schemas, generated from the SDKs by
 * scripts/provider-schemas.mjs) accept and reject: the shapes today's agents send, written here after
 * the SDKs' type definitions, and the mistakes the schemas exist to catch. A regeneration that loses
 * one of these fails here, whatever the byte comparison says.
 */
const sig = 'c2lnbmF0dXJl';
const accepted: Record<string, [string, unknown][]> = {
  anthropic: [
    ['a system message inside messages (Claude Code)', { role: 'system', content: '<env>cwd</env>' }],
    [
      'a system message with blocks and clear_at',
      { role: 'system', content: [{ type: 'text', text: 'x' }], clear_at: 'next_user_message' },
    ],
    ['a system message with only output_config', { role: 'system', output_config: { effort: 'low' } }],
    ['tool_addition', { role: 'system', content: [{ type: 'tool_addition', tool: { type: 'tool_reference', name: 'Bash' } }] }],
    ['tool_removal', { role: 'system', content: [{ type: 'tool_removal', tool: { type: 'tool_reference', name: 'Bash' } }] }],
    ['compaction', { role: 'assistant', content: [{ type: 'compaction', content: 'summary so far' }] }],
    [
      'tool_result with cache_control',
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok', cache_control: { type: 'ephemeral' } }],
      },
    ],
    [
      'server_tool_use and web_search_tool_result',
      {
        role: 'assistant',
        content: [
          { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } },
          {
            type: 'web_search_tool_result',
            tool_use_id: 'srvtoolu_1',
            content: [{ type: 'web_search_result', url: 'https://e.x', title: 't', encrypted_content: 'e' }],
          },
        ],
      },
    ],
    [
      'bash_code_execution_tool_result',
      {
        role: 'assistant',
        content: [
          {
            type: 'bash_code_execution_tool_result',
            tool_use_id: 'srvtoolu_4',
            content: { type: 'bash_code_execution_result', stdout: '1', stderr: '', return_code: 0, content: [] },
          },
        ],
      },
    ],
    [
      'mcp_tool_use',
      { role: 'assistant', content: [{ type: 'mcp_tool_use', id: 'mcptoolu_1', name: 'n', server_name: 's', input: {} }] },
    ],
    ['mcp_tool_result', { role: 'user', content: [{ type: 'mcp_tool_result', tool_use_id: 'mcptoolu_1', content: 'ok' }] }],
    ['container_upload', { role: 'user', content: [{ type: 'container_upload', file_id: 'file_1' }] }],
    [
      'thinking and redacted_thinking',
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 't', signature: sig },
          { type: 'redacted_thinking', data: 'abc' },
        ],
      },
    ],
  ],
  'openai-responses': [
    ['a developer message', { role: 'developer', content: 'x' }],
    [
      'an input message with an id (Codex)',
      { type: 'message', id: 'msg_1', role: 'developer', content: [{ type: 'input_text', text: 'x' }] },
    ],
    ['compaction', { type: 'compaction', encrypted_content: 'gAAA' }],
    ['reasoning with encrypted_content', { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAA' }],
    ['custom_tool_call', { type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: '*** Begin Patch' }],
    ['custom_tool_call_output', { type: 'custom_tool_call_output', call_id: 'c1', output: 'done' }],
    [
      'local_shell_call',
      {
        type: 'local_shell_call',
        id: 'ls_1',
        call_id: 'c2',
        status: 'completed',
        action: { type: 'exec', command: ['ls'], env: {} },
      },
    ],
    ['local_shell_call_output', { type: 'local_shell_call_output', id: 'c2', output: 'a b' }],
    ['mcp_call', { type: 'mcp_call', id: 'mcp_1', server_label: 's', name: 'n', arguments: '{}' }],
    ['mcp_list_tools', { type: 'mcp_list_tools', id: 'mcpl_1', server_label: 's', tools: [{ name: 'n', input_schema: {} }] }],
    ['web_search_call', { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } }],
    [
      'computer_call',
      {
        type: 'computer_call',
        id: 'cu_1',
        call_id: 'c3',
        status: 'completed',
        pending_safety_checks: [],
        action: { type: 'screenshot' },
      },
    ],
    [
      'computer_call_output',
      {
        type: 'computer_call_output',
        call_id: 'c3',
        output: { type: 'computer_screenshot', image_url: 'data:image/png;base64,AA' },
      },
    ],
    ['image_generation_call', { type: 'image_generation_call', id: 'ig_1', status: 'completed', result: 'AA' }],
  ],
  'openai-chat': [
    ['a developer message', { role: 'developer', content: 'x' }],
    ['reasoning_content (DeepSeek, Kimi: OpenAI objects are open)', { role: 'assistant', content: 'x', reasoning_content: 'r' }],
    [
      'a custom tool call',
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'custom', custom: { name: 'n', input: 'x' } }] },
    ],
    ['a tool message', { role: 'tool', tool_call_id: 'c', content: 'ok' }],
  ],
  gemini: [
    [
      'a function call with an id and a thought signature',
      { role: 'model', parts: [{ functionCall: { id: 'f1', name: 'n', args: {} }, thoughtSignature: sig }] },
    ],
    ['proto field names', { role: 'model', parts: [{ function_call: { name: 'n', args: {} }, thought_signature: sig }] }],
    ['a thought', { role: 'model', parts: [{ text: 'hm', thought: true }] }],
    ['inline_data', { role: 'user', parts: [{ inline_data: { mime_type: 'image/png', data: 'iVBORw0KGgo=' } }] }],
    ['a server-side toolCall', { role: 'model', parts: [{ toolCall: { id: 't1', toolType: 'GOOGLE_SEARCH_WEB', args: {} } }] }],
    [
      'executableCode and codeExecutionResult',
      {
        role: 'model',
        parts: [
          { executableCode: { language: 'PYTHON', code: 'print(1)' } },
          { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '1' } },
        ],
      },
    ],
  ],
};
const rejected: Record<string, [string, unknown][]> = {
  anthropic: [
    ['role tool', { role: 'tool', content: 'x', tool_call_id: 'a' }],
    ['an unknown block type', { role: 'user', content: [{ type: 'hologram', data: 1 }] }],
    ['tool_use without id', { role: 'assistant', content: [{ type: 'tool_use', name: 'n', input: {} }] }],
    ['thinking without signature', { role: 'assistant', content: [{ type: 'thinking', thinking: 't' }] }],
    ['an unknown key', { role: 'user', content: 'x', id: 'msg_1' }],
    ['clear_at on a user message', { role: 'user', content: 'x', clear_at: 'never' }],
  ],
  'openai-responses': [
    ['role tool', { role: 'tool', content: 'x' }],
    ['a Chat text part', { role: 'user', content: [{ type: 'text', text: 'x' }] }],
    ['function_call without arguments', { type: 'function_call', call_id: 'c', name: 'n' }],
    ['an unknown item type', { type: 'hologram', id: 'x' }],
    ['reasoning without summary', { type: 'reasoning', id: 'rs_1' }],
  ],
  'openai-chat': [
    ['role model', { role: 'model', content: 'x' }],
    ['a tool message without tool_call_id', { role: 'tool', content: 'x' }],
    [
      'object arguments',
      { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'n', arguments: {} } }] },
    ],
    ['a Responses part', { role: 'user', content: [{ type: 'input_text', text: 'x' }] }],
    ['null user content', { role: 'user', content: null }],
  ],
  gemini: [
    ['role assistant', { role: 'assistant', parts: [{ text: 'x' }] }],
    ['an empty part', { role: 'user', parts: [{}] }],
    [
      'two data fields in one part',
      { role: 'user', parts: [{ text: 'x', inlineData: { mimeType: 'image/png', data: 'AA==' } }] },
    ],
    ['functionResponse without response', { role: 'user', parts: [{ functionResponse: { name: 'n' } }] }],
    ['an unknown key', { role: 'user', parts: [{ text: 'x', foo: 1 }] }],
    ['a field under both names', { role: 'model', parts: [{ functionCall: { name: 'n' }, function_call: { name: 'n' } }] }],
    ['a non-base64 thought signature', { role: 'model', parts: [{ text: 'x', thoughtSignature: 'not base64!' }] }],
    ['empty parts', { role: 'user', parts: [] }],
    ['partialArgs ("not supported in Gemini API")', { role: 'model', parts: [{ functionCall: { name: 'n', partialArgs: [] } }] }],
  ],
};

for (const [format, cases] of Object.entries(accepted)) {
  t.test(`the ${format} schema accepts today's shapes`, async (t) => {
    for (const [name, message] of cases) t.same(schemaErrors(format, [message]), [], name);
  });
}
for (const [format, cases] of Object.entries(rejected)) {
  t.test(`the ${format} schema rejects what its provider would`, async (t) => {
    for (const [name, message] of cases) t.equal(schemaErrors(format, [message]).length, 1, name);
  });
}
