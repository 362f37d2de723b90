/**
 * Checks that a Redis holding raw tool output is closed to everyone but the service: a password
 * from a Secret (and the service's store URL carrying the same one), a NetworkPolicy admitting
 * only the compactor pods, and a hardened container. Used by `manifestProblems`.
 */

// biome-ignore lint/suspicious/noExplicitAny: parsed YAML is untyped; the checks below test every shape they rely on
type Doc = Record<string, any>;

/** `$(NAME)` references in a Kubernetes env value or argument (expanded from the container's earlier env). */
export const references = (value: unknown): string[] =>
  typeof value === 'string' ? [...value.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)].map((m) => m[1] ?? '') : [];

const secretOf = (c: Doc, name: string): { name: string; key: string } | undefined => {
  const e = (c.env ?? []).find((x: Doc) => x.name === name);
  const ref = e?.valueFrom?.secretKeyRef;
  return ref ? { name: ref.name, key: ref.key } : undefined;
};

/** Whether `selector` (matchLabels only) selects pods labelled `labels`. */
const selects = (selector: Doc | undefined, labels: Record<string, string>) => {
  const match: Record<string, string> = selector?.matchLabels ?? {};
  return !selector?.matchExpressions && Object.keys(match).length > 0 && Object.entries(match).every(([k, v]) => labels[k] === v);
};

export interface RedisWorkload {
  where: string;
  container: Doc;
  pod: Doc;
  labels: Record<string, string>;
}

export interface CompactorWorkload {
  where: string;
  container: Doc;
  labels: Record<string, string>;
}

/** Password: `--requirepass $(VAR)` with VAR from a Secret; the probe's redis-cli authenticates. */
function passwordProblems(redis: RedisWorkload): string[] {
  const { where, container } = redis;
  const args = [...(container.command ?? []), ...(container.args ?? [])].map(String);
  const i = args.indexOf('--requirepass');
  const [variable] = i >= 0 ? references(args[i + 1]) : [];
  if (!variable || !secretOf(container, variable)) {
    return [`${where}: Redis needs a password: --requirepass $(VAR), VAR from a secretKeyRef`];
  }
  const probe = JSON.stringify(container.readinessProbe?.exec ?? {});
  if (/redis-cli/.test(probe) && !secretOf(container, 'REDISCLI_AUTH')) {
    return [`${where}: the readiness probe's redis-cli needs REDISCLI_AUTH from the password's Secret`];
  }
  return [];
}

/** The store URL carries the password Redis requires, from the same Secret key, defined before it. */
function urlProblems(redis: RedisWorkload, compactors: readonly CompactorWorkload[]): string[] {
  const args = [...(redis.container.command ?? []), ...(redis.container.args ?? [])].map(String);
  const [variable] = references(args[args.indexOf('--requirepass') + 1]);
  const wanted = variable ? secretOf(redis.container, variable) : undefined;
  const problems: string[] = [];
  for (const { where, container } of compactors) {
    const env: Doc[] = container.env ?? [];
    const at = env.findIndex((e) => e.name === 'COMPACTOR_STORE_URL');
    const url = env[at]?.value;
    if (typeof url !== 'string' || !/^rediss?:/.test(url)) continue;
    const userinfo = /^rediss?:\/\/([^@/]*)@/.exec(url)?.[1] ?? '';
    const [used] = references(userinfo);
    const source = used ? secretOf(container, used) : undefined;
    if (!used || !source || !wanted || source.name !== wanted.name || source.key !== wanted.key) {
      problems.push(
        `${where} compactor: COMPACTOR_STORE_URL must carry Redis's password, $(VAR) with VAR from ${wanted ? `${wanted.name}/${wanted.key}` : 'its Secret'}`,
      );
    } else if (env.findIndex((e) => e.name === used) > at) {
      problems.push(`${where} compactor: ${used} must be defined before COMPACTOR_STORE_URL, which refers to it`);
    }
  }
  return problems;
}

/** A NetworkPolicy selects the Redis pods, with Ingress only from compactor pods. */
function networkProblems(redis: RedisWorkload, compactors: readonly CompactorWorkload[], docs: readonly Doc[]): string[] {
  const policies = docs.filter(
    (d) =>
      d.kind === 'NetworkPolicy' && selects(d.spec?.podSelector, redis.labels) && (d.spec?.policyTypes ?? []).includes('Ingress'),
  );
  if (policies.length === 0) return [`${redis.where}: no NetworkPolicy restricts who reaches Redis`];
  const open = policies.some((p) =>
    (p.spec?.ingress ?? []).some(
      (rule: Doc) =>
        !rule.from?.length ||
        rule.from.some(
          (peer: Doc) => peer.ipBlock || peer.namespaceSelector || !compactors.some((c) => selects(peer.podSelector, c.labels)),
        ),
    ),
  );
  return open ? [`${redis.where}: a NetworkPolicy admits to Redis pods other than the compactor's`] : [];
}

/** Non-root, read-only root filesystem, no capabilities, no privilege escalation, seccomp RuntimeDefault. */
function hardeningProblems(redis: RedisWorkload): string[] {
  const { where, container, pod } = redis;
  const sc: Doc = { ...(pod.securityContext ?? {}), ...(container.securityContext ?? {}) };
  const problems: string[] = [];
  if (sc.runAsNonRoot !== true) problems.push(`${where}: Redis must run as non-root (runAsNonRoot: true)`);
  if (sc.readOnlyRootFilesystem !== true) problems.push(`${where}: Redis needs a read-only root filesystem`);
  if (sc.allowPrivilegeEscalation !== false) problems.push(`${where}: Redis must not escalate privileges`);
  if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}: Redis must drop all capabilities`);
  if (sc.seccompProfile?.type !== 'RuntimeDefault') problems.push(`${where}: Redis needs seccompProfile RuntimeDefault`);
  if (pod.securityContext?.fsGroup === undefined) problems.push(`${where}: Redis's pod needs an fsGroup to write its volume`);
  return problems;
}

/** Every problem of the Redis workloads of one manifest file. */
export function redisSecurityProblems(
  redises: readonly RedisWorkload[],
  compactors: readonly CompactorWorkload[],
  docs: readonly Doc[],
): string[] {
  return redises.flatMap((r) => [
    ...passwordProblems(r),
    ...urlProblems(r, compactors),
    ...networkProblems(r, compactors, docs),
    ...hardeningProblems(r),
  ]);
}
