/** Types of compactor-service.mjs for the TypeScript examples. */
export function freePort(): Promise<number>;
export function startCompactor(): Promise<{ url: string; stop: () => Promise<void> }>;
export function recordingFetch(): {
  fetch: typeof fetch;
  calls: { path: string; body: unknown; status: number; answer: unknown }[];
};
