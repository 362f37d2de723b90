/**
 * What a format's messages carry that others' may not: the keys of a message (or item, or
 * content) and the types of its content parts (blocks, parts). Each adapter declares its own; what
 * is foreign to a format is derived from the others' declarations (`foreignTo`), so a new format
 * is one adapter file and its lines in the registry, and every other format learns its shapes.
 */
export interface Shapes {
  readonly keys: readonly string[];
  readonly types: readonly string[];
}

/** What only other formats carry: a message holding one is not of this format. */
export interface Foreign {
  readonly keys: ReadonlySet<string>;
  readonly types: ReadonlySet<string>;
}

/** The keys and part types that other formats declare and `own` does not. */
export function foreignTo(own: Shapes, all: readonly Shapes[]): Foreign {
  const keys = new Set<string>();
  const types = new Set<string>();
  for (const shapes of all) {
    if (shapes === own) continue;
    for (const k of shapes.keys) if (!own.keys.includes(k)) keys.add(k);
    for (const t of shapes.types) if (!own.types.includes(t)) types.add(t);
  }
  return { keys, types };
}

/** Whether a message has a key only other formats use. */
export function hasForeignKey(message: Record<string, unknown>, foreign: Foreign): boolean {
  for (const key of Object.keys(message)) if (foreign.keys.has(key)) return true;
  return false;
}
