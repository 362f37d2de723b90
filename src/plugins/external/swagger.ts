import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { jsonSchemaOverride, oneComponentPerSchema } from './openapi-components.js';
import { loadRecordedExamples, withExamples } from './openapi-examples.js';
import { SWAGGER_CSS } from './swagger-theme.js';

export const API_DESCRIPTION = `Compactor shrinks an LLM agent's conversation history before its next model call.
POST the message array in the provider's own wire format (OpenAI Chat Completions, Anthropic Messages,
OpenAI Responses or Gemini; \`format\` names it, or it is detected), with the usage your provider last
reported; get back the reduced history in the same format, what was done to each message, and what it
cost. Every output satisfies the structural rules of its format: tool calls stay with their results,
leading system messages and the newest group are kept byte-identical, and kept messages are returned as
the same JSON values they came in as. Each POST endpoint has examples that run as they are ("Try it out",
then "Execute"), one per wire format for the strategies.`;

const zodToJsonConfig = { override: jsonSchemaOverride };
const transformObject = createJsonSchemaTransformObject({ zodToJsonConfig });
type Document = ReturnType<typeof transformObject>;

/**
 * Error responses leave as `application/problem+json` (plugins/app/problem.ts); the schemas are
 * declared per status, which the generator files under `application/json`: the document says what
 * is sent. Only `Problem` bodies: a draining `/health/ready` answers 503 with its JSON status.
 */
function problemJson(document: Document): Document {
  const paths = (
    document as { paths?: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, unknown> }> }>> }
  ).paths;
  for (const methods of Object.values(paths ?? {})) {
    for (const operation of Object.values(methods)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const json = response.content?.['application/json'] as { schema?: { $ref?: string } } | undefined;
        if (Number(status) < 400 || !response.content || json?.schema?.$ref !== '#/components/schemas/Problem') continue;
        response.content = { 'application/problem+json': json };
      }
    }
  }
  return document;
}

const BEARER = {
  type: 'http',
  scheme: 'bearer',
  description:
    'An API key from `COMPACTOR_API_KEYS`, sent as `Authorization: Bearer <key>`. Needed on `/v1/*` (on every path with `COMPACTOR_AUTH_SCOPE=all`). Each key sees only the artifacts and cached summaries it made.',
} as const;

/**
 * With keys configured, `/v1` operations name the bearer scheme (Swagger UI's Authorize button and
 * locks); without, the service is open and the document names none.
 */
function security(document: Document, keys: boolean): Document {
  if (!keys) return document;
  const doc = document as { paths?: Record<string, Record<string, { security?: unknown }>>; components?: object };
  doc.components = { ...doc.components, securitySchemes: { bearerAuth: BEARER } };
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    if (!path.startsWith('/v1/')) continue;
    for (const operation of Object.values(methods)) operation.security = [{ bearerAuth: [] }];
  }
  return document;
}

/** The OpenAPI 3.1 document generated from the route schemas, Swagger UI at `/docs`. */
export default fp(
  async (app: FastifyInstance, options: { version: string; apiKeys: boolean }) => {
    const recorded = loadRecordedExamples();
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 'Compactor', version: options.version, description: API_DESCRIPTION },
        tags: [
          { name: 'strategies', description: 'Reduce a history' },
          { name: 'inspect', description: 'Count and check a history' },
          { name: 'conversations', description: 'What Compactor did to each model call of a conversation' },
          { name: 'health', description: 'Liveness and readiness' },
        ],
      },
      transform: createJsonSchemaTransform({ zodToJsonConfig }),
      transformObject: (input) =>
        withExamples(security(problemJson(oneComponentPerSchema(transformObject(input))), options.apiKeys), recorded),
    });
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      theme: { css: [{ filename: 'compactor.css', content: SWAGGER_CSS }] },
    });
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  },
  { name: 'swagger' },
);
