/**
 * The providers the proxy fronts, by name: the one list the guard, the routes and the
 * configuration read (the prefix each is served under, the variable naming its upstream and the
 * upstream it forwards to by default). No import: the configuration reads it at load.
 */

/** The providers, in the order their routes are registered. */
export const PROVIDER_NAMES = ['anthropic', 'openai', 'gemini'] as const;

export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** The path prefix a provider is served under. */
export const prefixOf = (name: ProviderName): `/${ProviderName}` => `/${name}`;

/** Where each provider's requests go when `COMPACTOR_UPSTREAM_<NAME>` is not set. */
export const UPSTREAM_DEFAULTS: Readonly<Record<ProviderName, string>> = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com',
  gemini: 'https://generativelanguage.googleapis.com',
};

/** The variable naming a provider's upstream. */
export const upstreamVariable = (name: ProviderName) =>
  `COMPACTOR_UPSTREAM_${name.toUpperCase() as Uppercase<ProviderName>}` as const;

/** Whether a route (as registered) is a proxy route: `/<provider>/…`. */
export function isProxyRoute(url: string): boolean {
  return PROVIDER_NAMES.some((name) => url.startsWith(`${prefixOf(name)}/`));
}
