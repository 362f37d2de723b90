/**
 * How the zod schemas become the document's components. fastify-type-provider-zod renders every
 * schema of zod's registry twice, in zod's input mode as `XInput` (request bodies refer to these)
 * and in its output mode as `X` (responses): 32 schemas listed twice, the two renderings differing
 * only where a schema is never used that way (a default makes a field required in output mode; an
 * output `z.object` is closed). Here each component keeps the rendering of the side it is used on,
 * under its own name, once; a schema used on both sides must render the same in both modes.
 */

type Json = Record<string, unknown>;

const PREFIX = '#/components/schemas/';
const INPUT = 'Input';

/** The components a value refers to, by name. */
function refsOf(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsOf(v, into);
  else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string' && v.startsWith(PREFIX)) into.add(v.slice(PREFIX.length));
      else refsOf(v, into);
    }
  }
  return into;
}

/** Every component reachable from `roots` through the components' own references. */
function reachable(roots: Set<string>, schemas: Record<string, Json>): Set<string> {
  const seen = new Set<string>();
  const queue = [...roots];
  for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
    if (seen.has(name) || !schemas[name]) continue;
    seen.add(name);
    queue.push(...refsOf(schemas[name], new Set()));
  }
  return seen;
}

/** A deep copy of `value` with every component reference renamed. */
function renamed<T>(value: T, rename: (name: string) => string): T {
  return JSON.parse(JSON.stringify(value), (key, v) =>
    key === '$ref' && typeof v === 'string' && v.startsWith(PREFIX) ? PREFIX + rename(v.slice(PREFIX.length)) : v,
  ) as T;
}

/**
 * The document with one component per schema: the input rendering for what requests use, the
 * output rendering for what responses use, each under the schema's id; components nothing uses
 * are left out. Throws (the app does not start) when a schema used by both requests and responses
 * renders differently in the two modes.
 */
export function oneComponentPerSchema<D extends { paths?: unknown; components?: { schemas?: Record<string, unknown> } }>(
  document: D,
): D {
  const schemas = (document.components?.schemas ?? {}) as Record<string, Json>;
  const base = (name: string) =>
    name.endsWith(INPUT) && schemas[name.slice(0, -INPUT.length)] ? name.slice(0, -INPUT.length) : name;
  const merged: Record<string, Json> = {};
  for (const name of [...reachable(refsOf(document.paths, new Set()), schemas)].sort()) {
    const id = base(name);
    const schema = renamed(schemas[name] as Json, base);
    const other = merged[id];
    if (other && JSON.stringify(other) !== JSON.stringify(schema)) {
      throw new Error(
        `OpenAPI: schema ${id} is used by requests and responses but renders differently in zod's input and output modes (a default, a transform, an open or closed object): give it one shape or two ids`,
      );
    }
    merged[id] = schema;
  }
  const paths = renamed(document.paths, base);
  return { ...document, paths, components: { ...document.components, schemas: merged } };
}

const SAFE = Number.MAX_SAFE_INTEGER;

/**
 * The `override` zod's JSON Schema conversion runs on every node: the type provider's own for
 * the 3.1 target (a union's branches that render as `{}` are dropped; no dates or undefined are
 * used here), and integers lose the ±(2^53 − 1) bounds zod gives every `int()`, which tell a
 * reader nothing and which Swagger UI shows as example values.
 */
export function jsonSchemaOverride(ctx: { zodSchema: unknown; jsonSchema: Json }): void {
  const json = ctx.jsonSchema;
  const def = (ctx.zodSchema as { _zod?: { def?: { type?: string } } })._zod?.def;
  if (def?.type === 'union' && Array.isArray(json.anyOf)) {
    json.anyOf = (json.anyOf as Json[]).filter((branch) => Object.keys(branch).length > 0);
  }
  if (json.type === 'integer') {
    if (json.minimum === -SAFE) delete json.minimum;
    if (json.maximum === SAFE) delete json.maximum;
  }
}
