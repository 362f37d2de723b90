import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigSchema, loadConfig } from '../../src/config.js';
import { type CompactorWorkload, type RedisWorkload, redisSecurityProblems, references } from './manifests-redis.js';

/**
 * Checks of the deployment files (deploy/kubernetes/*.yaml, docker-compose.yml, Dockerfile): each
 * check returns the problems it finds, as sentences, so that a test can assert an empty list for
 * the real files and a named problem for a deliberately broken copy.
 */

export const root = new URL('../../', import.meta.url).pathname;

// biome-ignore lint/suspicious/noExplicitAny: parsed YAML is untyped; the checks below test every shape they rely on
type Doc = Record<string, any>;

/** The documents of a multi-document YAML text (empty documents dropped); throws on a YAML error. */
export function yamlDocuments(text: string): Doc[] {
  return parseAllDocuments(text).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`YAML: ${doc.errors[0]?.message}`);
    const value = doc.toJS();
    return value === null || value === undefined ? [] : [value as Doc];
  });
}

interface Model {
  validate(): void;
}

/**
 * Validates one object against the Kubernetes OpenAPI schema of its apiVersion and kind, with the
 * JSON schemas that `kubernetes-models` bundles (compiled Ajv validators, no network).
 */
export async function kubernetesSchemaProblems(doc: Doc): Promise<string[]> {
  const where = `${doc.kind ?? '?'}/${doc.metadata?.name ?? '?'}`;
  if (typeof doc.apiVersion !== 'string' || typeof doc.kind !== 'string') return [`${where}: no apiVersion or kind`];
  let module: Record<string, unknown>;
  try {
    module = (await import(`kubernetes-models/${doc.apiVersion}`)) as Record<string, unknown>;
  } catch {
    return [`${where}: unknown apiVersion ${doc.apiVersion}`];
  }
  const Kind = module[doc.kind] as (new (data: Doc) => Model) | undefined;
  if (typeof Kind !== 'function') return [`${where}: unknown kind ${doc.kind} in ${doc.apiVersion}`];
  try {
    new Kind(doc).validate();
    return [];
  } catch (error) {
    const details = (error as { errors?: { instancePath?: string; message?: string }[] }).errors;
    const text = details?.length
      ? details
          .slice(0, 3)
          .map((e) => `${e.instancePath} ${e.message}`)
          .join('; ')
      : String(error);
    return [`${where}: ${text}`];
  }
}

/** A pod template's spec, for the kinds that have one. */
function podSpec(doc: Doc): Doc | undefined {
  if (doc.kind === 'Pod') return doc.spec;
  if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(doc.kind)) return doc.spec?.template?.spec;
  return undefined;
}

function podLabels(doc: Doc): Record<string, string> {
  return (doc.kind === 'Pod' ? doc.metadata?.labels : doc.spec?.template?.metadata?.labels) ?? {};
}

function podAnnotations(doc: Doc): Record<string, string> {
  return (doc.kind === 'Pod' ? doc.metadata?.annotations : doc.spec?.template?.metadata?.annotations) ?? {};
}

function containers(spec: Doc): Doc[] {
  return [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
}

const isCompactor = (c: Doc) => c.name === 'compactor' || /(^|\/)compactor(:|@|$)/.test(String(c.image ?? ''));
const isRedis = (c: Doc) => /(^|\/)redis(:|@|$)/.test(String(c.image ?? ''));

function env(c: Doc, name: string): Doc | undefined {
  return (c.env ?? []).find((e: Doc) => e.name === name);
}

/** A port reference (a number or a container port's name) as a number, or undefined when it names none. */
function resolvePort(ref: unknown, cs: readonly Doc[]): number | undefined {
  if (typeof ref === 'number') return cs.some((c) => (c.ports ?? []).some((p: Doc) => p.containerPort === ref)) ? ref : undefined;
  for (const c of cs) {
    const port = (c.ports ?? []).find((p: Doc) => p.name === ref);
    if (port) return port.containerPort;
  }
  return undefined;
}

/** Every secretKeyRef and secretRef in a pod spec: env, envFrom and volumes. */
function secretRefs(spec: Doc): { name: string; key?: string; optional: boolean; where: string }[] {
  const out: { name: string; key?: string; optional: boolean; where: string }[] = [];
  for (const c of containers(spec)) {
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      if (ref) out.push({ name: ref.name, key: ref.key, optional: ref.optional === true, where: `${c.name}.env.${e.name}` });
    }
    for (const e of c.envFrom ?? []) {
      if (e.secretRef) out.push({ name: e.secretRef.name, optional: e.secretRef.optional === true, where: `${c.name}.envFrom` });
    }
  }
  for (const v of spec.volumes ?? []) {
    if (v.secret) out.push({ name: v.secret.secretName, optional: v.secret.optional === true, where: `volume ${v.name}` });
  }
  return out;
}

const parseBytes = (text: string): number | undefined => {
  const m = /^(\d+)(b|k|kb|m|mb|g|gb)?$/i.exec(text);
  if (!m) return undefined;
  const unit = (m[2] ?? 'b').toLowerCase();
  const scale: Record<string, number> = { b: 1, k: 1e3, kb: 1024, m: 1e6, mb: 1024 ** 2, g: 1e9, gb: 1024 ** 3 };
  return Number(m[1]) * (scale[unit] ?? 1);
};

const parseQuantity = (text: string): number | undefined => {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(text);
  if (!m) return undefined;
  const scale: Record<string, number> = {
    Ki: 1024,
    Mi: 1024 ** 2,
    Gi: 1024 ** 3,
    Ti: 1024 ** 4,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
  };
  return Number(m[1]) * (m[2] ? (scale[m[2]] ?? 1) : 1);
};

/** `--flag value` in a redis-server argument list. */
function flag(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

/**
 * Problems with the Redis server's arguments: it persists (appendonly yes), never evicts
 * (noeviction) and has an explicit maxmemory (below `memoryLimit` bytes when there is one).
 */
export function redisArgProblems(args: readonly string[], where: string, memoryLimit?: number): string[] {
  const problems: string[] = [];
  if (flag(args, 'appendonly') !== 'yes') problems.push(`${where}: Redis must persist (--appendonly yes)`);
  if (flag(args, 'maxmemory-policy') !== 'noeviction')
    problems.push(`${where}: Redis must not evict (--maxmemory-policy noeviction)`);
  const max = flag(args, 'maxmemory');
  const bytes = max === undefined ? undefined : parseBytes(max);
  if (!bytes) problems.push(`${where}: Redis needs an explicit --maxmemory (got ${max ?? 'none'})`);
  else if (memoryLimit !== undefined && bytes >= memoryLimit) {
    problems.push(`${where}: the container's memory limit must exceed maxmemory ${max} (AOF rewrites fork)`);
  }
  return problems;
}

/** The port Compactor listens on in a container: its PORT, else the default. */
function listenPort(c: Doc): number | undefined {
  const port = env(c, 'PORT');
  if (!port) return ConfigSchema.parse({}).PORT;
  return typeof port.value === 'string' && /^\d+$/.test(port.value) ? Number(port.value) : undefined;
}

/**
 * Cross-object problems of one Kubernetes manifest file: Secrets, ports, probes, the agent's key
 * and URL, Redis's persistence and eviction, Services and the store URL.
 */
export function manifestProblems(text: string, docs: readonly Doc[]): string[] {
  const problems: string[] = [];
  const secrets = new Map<string, Doc>(docs.filter((d) => d.kind === 'Secret').map((d) => [d.metadata?.name, d]));
  const services = docs.filter((d) => d.kind === 'Service');
  const workloads = docs.filter((d) => podSpec(d));

  for (const [name, secret] of secrets) {
    if (!/kubectl create secret generic/.test(text) || !text.includes(`generic ${name}`)) {
      problems.push(`Secret ${name}: no comment showing how to create it (kubectl create secret generic ${name} …)`);
    }
    if (secret.data) problems.push(`Secret ${name}: a template holds stringData placeholders, not data`);
    const values = Object.entries(secret.stringData ?? {});
    if (values.length === 0) problems.push(`Secret ${name}: no stringData placeholders`);
    for (const [key, value] of values) {
      if (!/^REPLACE_/.test(String(value))) problems.push(`Secret ${name}: stringData.${key} is not a REPLACE_… placeholder`);
    }
    if (secret.metadata?.labels?.['compactor/template'] !== 'secret') {
      problems.push(`Secret ${name}: no label compactor/template: secret (deploy/README.md applies the file without it)`);
    }
  }

  for (const w of workloads) {
    const spec = podSpec(w) as Doc;
    const where = `${w.kind}/${w.metadata?.name}`;
    const cs = containers(spec);
    for (const ref of secretRefs(spec)) {
      const secret = secrets.get(ref.name);
      if (!secret) {
        problems.push(`${where} ${ref.where}: Secret ${ref.name} is not defined in this file`);
        continue;
      }
      const keys = new Set([...Object.keys(secret.stringData ?? {}), ...Object.keys(secret.data ?? {})]);
      if (ref.key && !ref.optional && !keys.has(ref.key)) {
        problems.push(`${where} ${ref.where}: Secret ${ref.name} has no key ${ref.key} (and the reference is not optional)`);
      }
    }

    const compactor = cs.find(isCompactor);
    if (compactor) problems.push(...compactorProblems(compactor, cs, spec, w, where));

    for (const redis of cs.filter(isRedis)) {
      const args = [...(redis.command ?? []), ...(redis.args ?? [])].map(String);
      const limit = redis.resources?.limits?.memory;
      problems.push(...redisArgProblems(args, `${where} ${redis.name}`, limit ? parseQuantity(String(limit)) : undefined));
      const mount = (redis.volumeMounts ?? []).find((m: Doc) => m.mountPath === '/data');
      const claims = new Set([
        ...(w.spec?.volumeClaimTemplates ?? []).map((v: Doc) => v.metadata?.name),
        ...(spec.volumes ?? []).filter((v: Doc) => v.persistentVolumeClaim).map((v: Doc) => v.name),
      ]);
      if (!mount || !claims.has(mount.name)) {
        problems.push(`${where} ${redis.name}: /data must be a persistent volume (a volumeClaimTemplate or a PVC)`);
      }
      const redisPort = resolvePort('redis', [redis]) ?? resolvePort(6379, [redis]);
      for (const kind of ['readinessProbe', 'livenessProbe'] as const) {
        const probe = redis[kind];
        if (!probe) problems.push(`${where} ${redis.name}: no ${kind}`);
        const port = probe?.tcpSocket?.port;
        if (port !== undefined && resolvePort(port, [redis]) !== redisPort) {
          problems.push(`${where} ${redis.name}: ${kind} port ${port} is not its containerPort`);
        }
      }
    }
  }

  for (const s of services) {
    const where = `Service/${s.metadata?.name}`;
    const selector: Record<string, string> = s.spec?.selector ?? {};
    const targets = workloads.filter((w) => Object.entries(selector).every(([k, v]) => podLabels(w)[k] === v));
    if (Object.keys(selector).length === 0 || targets.length === 0) {
      problems.push(`${where}: its selector matches no pod template in this file`);
      continue;
    }
    for (const p of s.spec?.ports ?? []) {
      for (const t of targets) {
        if (resolvePort(p.targetPort ?? p.port, containers(podSpec(t) as Doc)) === undefined) {
          problems.push(`${where}: targetPort ${p.targetPort ?? p.port} is no containerPort of ${t.kind}/${t.metadata?.name}`);
        }
      }
    }
  }

  const redises: RedisWorkload[] = [];
  const compactors: CompactorWorkload[] = [];
  for (const w of workloads) {
    const pod = podSpec(w) as Doc;
    const where = `${w.kind}/${w.metadata?.name}`;
    for (const c of containers(pod)) {
      if (isRedis(c)) redises.push({ where: `${where} ${c.name}`, container: c, pod, labels: podLabels(w) });
      else if (isCompactor(c)) compactors.push({ where, container: c, labels: podLabels(w) });
    }
  }
  problems.push(...redisSecurityProblems(redises, compactors, docs));

  for (const w of workloads) {
    const compactor = containers(podSpec(w) as Doc).find(isCompactor);
    const url = compactor && env(compactor, 'COMPACTOR_STORE_URL')?.value;
    const m = typeof url === 'string' ? /^rediss?:\/\/(?:[^@/]*@)?([^:/]+)(?::(\d+))?/.exec(url) : null;
    if (!m) continue;
    const [, host, port = '6379'] = m;
    const service = services.find((s) => s.metadata?.name === host?.split('.')[0]);
    if (!service)
      problems.push(`${w.kind}/${w.metadata?.name}: COMPACTOR_STORE_URL names Service ${host}, not defined in this file`);
    else if (!(service.spec?.ports ?? []).some((p: Doc) => p.port === Number(port))) {
      problems.push(`${w.kind}/${w.metadata?.name}: COMPACTOR_STORE_URL port ${port} is not a port of Service ${host}`);
    }
  }
  return problems;
}

function compactorProblems(c: Doc, cs: readonly Doc[], spec: Doc, w: Doc, where: string): string[] {
  const problems: string[] = [];
  const port = listenPort(c);
  const http = (c.ports ?? []).find((p: Doc) => p.name === 'http');
  if (port === undefined) problems.push(`${where} compactor: PORT is not a literal port number`);
  if (!http) problems.push(`${where} compactor: no containerPort named http`);
  else if (http.containerPort !== port)
    problems.push(`${where} compactor: containerPort ${http.containerPort} is not PORT ${port}`);
  if (env(c, 'HOST')?.value !== '0.0.0.0') problems.push(`${where} compactor: HOST must be 0.0.0.0 (probes come to the pod IP)`);

  // Every variable set is one the service reads (or one another refers to as $(NAME), such as a
  // password in the store URL), and the literal ones parse (secrets filled in, $(NAME) expanded).
  const known = new Set(Object.keys(ConfigSchema.shape));
  const referred = new Set((c.env ?? []).flatMap((e: Doc) => references(e.value)));
  const values: Record<string, string> = {};
  const helpers: Record<string, string> = {};
  for (const e of c.env ?? []) {
    const own = known.has(e.name);
    if (!own && !(referred.has(e.name) && !e.name.startsWith('COMPACTOR_'))) {
      problems.push(`${where} compactor: ${e.name} is not a configuration variable (src/config.ts)`);
    }
    const value =
      typeof e.value === 'string'
        ? e.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_: string, name: string) => helpers[name] ?? `$(${name})`)
        : e.valueFrom?.secretKeyRef && !e.valueFrom.secretKeyRef.optional
          ? 'k'.repeat(32)
          : undefined;
    if (value === undefined) continue;
    if (own) values[e.name] = value;
    else helpers[e.name] = value;
  }
  try {
    const config = loadConfig(values);
    if (config.COMPACTOR_AUTH_SCOPE === 'all')
      problems.push(`${where} compactor: COMPACTOR_AUTH_SCOPE=all answers the probes 401`);
    if (!config.COMPACTOR_API_KEYS) problems.push(`${where} compactor: COMPACTOR_API_KEYS is not set`);
  } catch (error) {
    problems.push(`${where} compactor: ${(error as Error).message}`);
  }

  const paths = { readinessProbe: '/health/ready', livenessProbe: '/health/live', startupProbe: '/health/live' } as const;
  for (const [kind, path] of Object.entries(paths)) {
    const probe = c[kind];
    if (!probe) {
      if (kind !== 'startupProbe') problems.push(`${where} compactor: no ${kind}`);
      continue;
    }
    if (probe.httpGet?.path !== path)
      problems.push(`${where} compactor: ${kind} path is ${probe.httpGet?.path}, expected ${path}`);
    if (resolvePort(probe.httpGet?.port, [c]) !== port) {
      problems.push(`${where} compactor: ${kind} port ${probe.httpGet?.port} is not the listening port ${port}`);
    }
  }

  const annotations = podAnnotations(w);
  if (annotations['prometheus.io/port'] !== undefined && Number(annotations['prometheus.io/port']) !== port) {
    problems.push(`${where}: prometheus.io/port ${annotations['prometheus.io/port']} is not the listening port ${port}`);
  }

  // The agents beside it: they call it on loopback at its port, with the key it checks.
  const keys = env(c, 'COMPACTOR_API_KEYS')?.valueFrom?.secretKeyRef;
  for (const agent of cs.filter((x) => x !== c && !isRedis(x) && !(spec.initContainers ?? []).includes(x))) {
    const url = env(agent, 'COMPACTOR_URL')?.value;
    if (!new RegExp(`^http://(127\\.0\\.0\\.1|localhost):${port}/?$`).test(String(url))) {
      problems.push(`${where} ${agent.name}: COMPACTOR_URL ${url} is not http://127.0.0.1:${port}`);
    }
    const ref = env(agent, 'COMPACTOR_API_KEY')?.valueFrom?.secretKeyRef;
    if (!ref) problems.push(`${where} ${agent.name}: no COMPACTOR_API_KEY from a secretKeyRef`);
    else if (!keys || ref.name !== keys.name || ref.key !== keys.key) {
      problems.push(
        `${where} ${agent.name}: COMPACTOR_API_KEY comes from ${ref.name}/${ref.key}, not the Secret and key of COMPACTOR_API_KEYS (${keys?.name}/${keys?.key})`,
      );
    }
  }
  return problems;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
let composeValidator: ValidateFunction | undefined;

/** The Compose Specification's schema (vendored in test/fixtures/compose-spec, see SOURCE.md there). */
export function composeSchema(): ValidateFunction {
  if (composeValidator) return composeValidator;
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  const schema = JSON.parse(readFileSync(join(root, 'test/fixtures/compose-spec/compose-spec.json'), 'utf8'));
  composeValidator = ajv.compile(schema);
  return composeValidator;
}

/**
 * `${NAME}`, `${NAME:-default}` and `${NAME-default}` replaced as Compose does with an empty
 * environment (the default, else empty); `$$` is a literal `$`.
 */
export function interpolate(value: unknown, vars: Record<string, string> = {}): unknown {
  if (typeof value === 'string') {
    return value
      .replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_, name: string, fallback?: string) => vars[name] ?? fallback ?? '')
      .replace(/\$\$/g, '$');
  }
  if (Array.isArray(value)) return value.map((v) => interpolate(v, vars));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, vars)]));
  }
  return value;
}

/** Problems of a compose file: its schema (after interpolation, as Compose validates), ports, healthcheck, Redis. */
export function composeProblems(text: string): string[] {
  const problems: string[] = [];
  const raw = parse(text) as Doc;
  const runs: Record<string, string>[] = [{}, { PORT: '9090' }];
  for (const vars of runs) {
    const file = interpolate(raw, vars) as Doc;
    const validate = composeSchema();
    if (!validate(file)) {
      problems.push(
        `compose schema (${JSON.stringify(vars)}): ${validate.errors
          ?.slice(0, 3)
          .map((e) => `${e.instancePath} ${e.message}`)
          .join('; ')}`,
      );
    }
    const app = file.services?.compactor;
    if (!app) {
      problems.push('compose: no compactor service');
      continue;
    }
    const port = Number(app.environment?.PORT ?? ConfigSchema.parse({}).PORT);
    const wanted = Number(vars.PORT ?? ConfigSchema.parse({}).PORT);
    if (port !== wanted) problems.push(`compose: PORT=${wanted} in the environment does not set the container's PORT (${port})`);
    const published = (app.ports ?? []).map(String);
    if (!published.some((p: string) => p.endsWith(`:${port}`))) {
      problems.push(`compose: no published port maps to the container's PORT ${port} (${published.join(', ')})`);
    }
    // A port published beyond this machine needs keys: an open service must listen on loopback only.
    for (const p of published) {
      const parts = p.split(':');
      const host = parts.length >= 3 ? parts.slice(0, -2).join(':') : '';
      if (!/^(127\.0\.0\.1|localhost|\[::1\])$/.test(host) && !app.environment?.COMPACTOR_API_KEYS) {
        problems.push(
          `compose: port ${p} is published on every interface with no key (bind it to 127.0.0.1 or set COMPACTOR_API_KEYS)`,
        );
      }
    }
    const test = (app.healthcheck?.test ?? []).join(' ');
    if (!/process\.env\.PORT/.test(test) || /127\.0\.0\.1:\d/.test(test)) {
      problems.push('compose: the healthcheck must read the container PORT (process.env.PORT), not a fixed port');
    }
    if (!/\/health\/(ready|live)/.test(test)) problems.push('compose: the healthcheck calls no /health endpoint');
  }
  const redis = raw.services?.redis;
  if (redis) {
    const command = Array.isArray(redis.command) ? redis.command.map(String) : String(redis.command ?? '').split(/\s+/);
    problems.push(...redisArgProblems(command, 'compose redis'));
    const data = (redis.volumes ?? []).map(String).find((v: string) => /:\/data(:|$)/.test(v));
    const volume = data?.split(':')[0];
    if (!volume || !(volume in (raw.volumes ?? {}))) problems.push('compose redis: /data must be a named volume (persistence)');
  }
  return problems;
}

/** Problems of the Dockerfile: the start command as tested, Node 22, the default port, the healthcheck's port. */
export function dockerfileProblems(text: string, startScript: string): string[] {
  const problems: string[] = [];
  const from = [...text.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1] ?? '');
  if (from.length === 0 || !from.every((image) => /^node:22[-.]/.test(image))) {
    problems.push(`Dockerfile: every stage must be a Node 22 LTS image (${from.join(', ')})`);
  }
  const cmd = /^CMD\s+(\[.*\])\s*$/m.exec(text)?.[1];
  const argv = cmd ? (JSON.parse(cmd) as string[]) : [];
  if (argv.join(' ') !== startScript) problems.push(`Dockerfile: CMD ${cmd} is not the tested start command (${startScript})`);
  const port = ConfigSchema.parse({}).PORT;
  const envPort = /^\s*(?:ENV\s+)?PORT=(\d+)/m.exec(text)?.[1];
  if (envPort && Number(envPort) !== port) problems.push(`Dockerfile: PORT=${envPort} differs from the default ${port}`);
  const expose = /^EXPOSE\s+(\d+)/m.exec(text)?.[1];
  if (Number(expose) !== Number(envPort ?? port)) problems.push(`Dockerfile: EXPOSE ${expose} is not PORT ${envPort ?? port}`);
  if (!/HOST=0\.0\.0\.0/.test(text)) problems.push('Dockerfile: the image must listen on HOST=0.0.0.0');
  const health = /HEALTHCHECK[\s\S]*?CMD\s+(\[.*\])/.exec(text)?.[1] ?? '';
  if (!/process\.env\.PORT/.test(health)) problems.push('Dockerfile: the HEALTHCHECK must read PORT');
  return problems;
}
