import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseDocument } from 'yaml';
import {
  composeProblems,
  dockerfileProblems,
  kubernetesSchemaProblems,
  manifestProblems,
  root,
  yamlDocuments,
} from '../support/manifests.js';

/**
 * The deployment files as a linter in CI would see them: every Kubernetes manifest against the
 * Kubernetes schemas, docker-compose.yml against the Compose Specification's schema, and the
 * cross-file facts a new user trips on (ports, probes, Secrets, the agent's key, Redis keeping its
 * data). Each check is also run on a broken copy, so a check that stops detecting fails here.
 */

const k8sDir = join(root, 'deploy/kubernetes');
const manifests = readdirSync(k8sDir).filter((f) => /\.ya?ml$/.test(f));
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const pkg = JSON.parse(read('package.json')) as { scripts: { start: string } };

/** The documents of a manifest with `edit` applied to a deep copy. */
function edited(file: string, edit: (docs: Record<string, unknown>[]) => void) {
  const text = read(`deploy/kubernetes/${file}`);
  const docs = structuredClone(yamlDocuments(text));
  edit(docs);
  return { text, docs };
}

// biome-ignore lint/suspicious/noExplicitAny: reaching into parsed YAML to break one field
const find = (docs: any[], kind: string, name: string): any => docs.find((d) => d.kind === kind && d.metadata?.name === name);

t.test('there are manifests to check', async (t) => {
  t.ok(manifests.includes('sidecar.yaml'), 'sidecar.yaml');
  t.ok(manifests.includes('shared-redis.yaml'), 'shared-redis.yaml');
});

for (const file of manifests) {
  t.test(`${file}: every object is valid against the Kubernetes schemas`, async (t) => {
    const docs = yamlDocuments(read(`deploy/kubernetes/${file}`));
    t.ok(docs.length > 0, 'has objects');
    for (const doc of docs) t.same(await kubernetesSchemaProblems(doc), [], `${doc.kind}/${doc.metadata?.name}`);
  });

  t.test(`${file}: ports, probes, Secrets, the agent's key and Redis agree`, async (t) => {
    const text = read(`deploy/kubernetes/${file}`);
    t.same(manifestProblems(text, yamlDocuments(text)), []);
  });
}

t.test('sidecar.yaml: the agent calls the sidecar on loopback with the key from the Secret the service reads', async (t) => {
  const docs = yamlDocuments(read('deploy/kubernetes/sidecar.yaml'));
  const pod = find(docs, 'Deployment', 'agent').spec.template.spec;
  const agent = pod.containers.find((c: { name: string }) => c.name === 'agent');
  const compactor = pod.containers.find((c: { name: string }) => c.name === 'compactor');
  // biome-ignore lint/suspicious/noExplicitAny: parsed YAML
  const envOf = (c: any, name: string) => c.env.find((e: { name: string }) => e.name === name);
  t.same(envOf(agent, 'COMPACTOR_API_KEY').valueFrom.secretKeyRef, envOf(compactor, 'COMPACTOR_API_KEYS').valueFrom.secretKeyRef);
  t.equal(envOf(agent, 'COMPACTOR_URL').value, `http://127.0.0.1:${compactor.ports[0].containerPort}`);
});

t.test(
  'shared-redis.yaml: Redis is closed: a password from the Secret in the URL too, a NetworkPolicy, a hardened container',
  async (t) => {
    const docs = yamlDocuments(read('deploy/kubernetes/shared-redis.yaml'));
    const pod = find(docs, 'StatefulSet', 'compactor-redis').spec.template.spec;
    const redis = pod.containers[0];
    t.match(redis.args.join(' '), /--requirepass \$\(REDIS_PASSWORD\)/);
    const compactor = find(docs, 'Deployment', 'compactor').spec.template.spec.containers[0];
    // biome-ignore lint/suspicious/noExplicitAny: parsed YAML
    const envOf = (c: any, name: string) => c.env.find((e: { name: string }) => e.name === name);
    t.same(envOf(compactor, 'REDIS_PASSWORD').valueFrom.secretKeyRef, { name: 'compactor', key: 'redis-password' });
    t.same(envOf(redis, 'REDIS_PASSWORD').valueFrom.secretKeyRef, { name: 'compactor', key: 'redis-password' });
    t.match(envOf(compactor, 'COMPACTOR_STORE_URL').value, /^redis:\/\/:\$\(REDIS_PASSWORD\)@compactor-redis:6379\/0$/);
    const policy = find(docs, 'NetworkPolicy', 'compactor-redis');
    t.same(policy.spec.podSelector.matchLabels, { app: 'compactor-redis' });
    t.same(policy.spec.ingress, [
      { from: [{ podSelector: { matchLabels: { app: 'compactor' } } }], ports: [{ protocol: 'TCP', port: 'redis' }] },
    ]);
    t.same(policy.spec.egress, [], 'and Redis opens no connection');
    t.match(pod.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    t.match(redis.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    t.equal(Number(envOf(compactor, 'COMPACTOR_STORE_MAX_BYTES').value), 335544320, 'the cap evicts before Redis is full');
  },
);

t.test('shared-redis.yaml: Redis is a StatefulSet with a volume claim, appendonly and noeviction', async (t) => {
  const docs = yamlDocuments(read('deploy/kubernetes/shared-redis.yaml'));
  const redis = find(docs, 'StatefulSet', 'compactor-redis');
  t.ok(redis, 'a StatefulSet');
  t.equal(redis.spec.volumeClaimTemplates[0].metadata.name, 'data');
  const args: string[] = redis.spec.template.spec.containers[0].args;
  t.match(args.join(' '), /--appendonly yes/);
  t.match(args.join(' '), /--maxmemory-policy noeviction/);
  t.match(args.join(' '), /--maxmemory \d+[a-z]*/);
});

t.test('broken manifests are caught', async (t) => {
  const cases: [string, string, (docs: ReturnType<typeof yamlDocuments>) => void, RegExp][] = [
    [
      'agent without its key',
      'sidecar.yaml',
      (docs) => {
        const agent = find(docs, 'Deployment', 'agent').spec.template.spec.containers[0];
        agent.env = agent.env.filter((e: { name: string }) => e.name !== 'COMPACTOR_API_KEY');
      },
      /agent: no COMPACTOR_API_KEY/,
    ],
    [
      'agent key from another Secret key',
      'sidecar.yaml',
      (docs) => {
        const agent = find(docs, 'Deployment', 'agent').spec.template.spec.containers[0];
        agent.env.find((e: { name: string }) => e.name === 'COMPACTOR_API_KEY').valueFrom.secretKeyRef.key = 'other';
      },
      /not the Secret and key of COMPACTOR_API_KEYS/,
    ],
    [
      'agent URL on another port',
      'sidecar.yaml',
      (docs) => {
        const agent = find(docs, 'Deployment', 'agent').spec.template.spec.containers[0];
        agent.env.find((e: { name: string }) => e.name === 'COMPACTOR_URL').value = 'http://127.0.0.1:9999';
      },
      /COMPACTOR_URL http:\/\/127\.0\.0\.1:9999/,
    ],
    [
      'PORT changed alone',
      'sidecar.yaml',
      (docs) => {
        const c = find(docs, 'Deployment', 'agent').spec.template.spec.containers[1];
        c.env.find((e: { name: string }) => e.name === 'PORT').value = '9090';
      },
      /containerPort 8080 is not PORT 9090/,
    ],
    [
      'probe on a wrong path',
      'sidecar.yaml',
      (docs) => {
        find(docs, 'Deployment', 'agent').spec.template.spec.containers[1].readinessProbe.httpGet.path = '/healthz';
      },
      /readinessProbe path is \/healthz/,
    ],
    [
      'Secret missing',
      'shared-redis.yaml',
      (docs) => {
        docs.splice(
          docs.findIndex((d) => d.kind === 'Secret'),
          1,
        );
      },
      /Secret compactor is not defined in this file/,
    ],
    [
      'Redis evicting',
      'shared-redis.yaml',
      (docs) => {
        const c = find(docs, 'StatefulSet', 'compactor-redis').spec.template.spec.containers[0];
        c.args[c.args.indexOf('noeviction')] = 'volatile-ttl';
      },
      /noeviction/,
    ],
    [
      'Redis without persistence',
      'shared-redis.yaml',
      (docs) => {
        const s = find(docs, 'StatefulSet', 'compactor-redis');
        const args = s.spec.template.spec.containers[0].args;
        args[args.indexOf('--appendonly') + 1] = 'no';
        delete s.spec.volumeClaimTemplates;
      },
      /appendonly yes[\s\S]*persistent volume/,
    ],
    [
      'Service targetPort naming no port',
      'shared-redis.yaml',
      (docs) => {
        find(docs, 'Service', 'compactor').spec.ports[0].targetPort = 'web';
      },
      /targetPort web/,
    ],
    [
      'store URL on a Service that is not there',
      'shared-redis.yaml',
      (docs) => {
        const c = find(docs, 'Deployment', 'compactor').spec.template.spec.containers[0];
        c.env.find((e: { name: string }) => e.name === 'COMPACTOR_STORE_URL').value = 'redis://redis:6379/0';
      },
      /names Service redis/,
    ],
    [
      'Redis without a password',
      'shared-redis.yaml',
      (docs) => {
        const c = find(docs, 'StatefulSet', 'compactor-redis').spec.template.spec.containers[0];
        c.args.splice(c.args.indexOf('--requirepass'), 2);
      },
      /Redis needs a password/,
    ],
    [
      'Redis with a literal password',
      'shared-redis.yaml',
      (docs) => {
        const c = find(docs, 'StatefulSet', 'compactor-redis').spec.template.spec.containers[0];
        c.args[c.args.indexOf('--requirepass') + 1] = 'hunter2';
      },
      /Redis needs a password: --requirepass \$\(VAR\), VAR from a secretKeyRef/,
    ],
    [
      'store URL without the password',
      'shared-redis.yaml',
      (docs) => {
        const c = find(docs, 'Deployment', 'compactor').spec.template.spec.containers[0];
        c.env.find((e: { name: string }) => e.name === 'COMPACTOR_STORE_URL').value = 'redis://compactor-redis:6379/0';
      },
      /COMPACTOR_STORE_URL must carry Redis's password/,
    ],
    [
      'store URL password from another Secret key',
      'shared-redis.yaml',
      (docs) => {
        const c = find(docs, 'Deployment', 'compactor').spec.template.spec.containers[0];
        c.env.find((e: { name: string }) => e.name === 'REDIS_PASSWORD').valueFrom.secretKeyRef.key = 'api-keys';
      },
      /COMPACTOR_STORE_URL must carry Redis's password, \$\(VAR\) with VAR from compactor\/redis-password/,
    ],
    [
      'password defined after the URL',
      'shared-redis.yaml',
      (docs) => {
        const c = find(docs, 'Deployment', 'compactor').spec.template.spec.containers[0];
        const i = c.env.findIndex((e: { name: string }) => e.name === 'REDIS_PASSWORD');
        c.env.push(...c.env.splice(i, 1));
      },
      /REDIS_PASSWORD must be defined before COMPACTOR_STORE_URL/,
    ],
    [
      'probe without the password',
      'shared-redis.yaml',
      (docs) => {
        const c = find(docs, 'StatefulSet', 'compactor-redis').spec.template.spec.containers[0];
        c.env = c.env.filter((e: { name: string }) => e.name !== 'REDISCLI_AUTH');
      },
      /needs REDISCLI_AUTH/,
    ],
    [
      'no NetworkPolicy',
      'shared-redis.yaml',
      (docs) => {
        docs.splice(
          docs.findIndex((d) => d.kind === 'NetworkPolicy'),
          1,
        );
      },
      /no NetworkPolicy restricts who reaches Redis/,
    ],
    [
      'a NetworkPolicy open to every pod',
      'shared-redis.yaml',
      (docs) => {
        find(docs, 'NetworkPolicy', 'compactor-redis').spec.ingress[0].from = [{ podSelector: {} }];
      },
      /admits to Redis pods other than the compactor's/,
    ],
    [
      'a NetworkPolicy open to a namespace',
      'shared-redis.yaml',
      (docs) => {
        find(docs, 'NetworkPolicy', 'compactor-redis').spec.ingress[0].from.push({ namespaceSelector: {} });
      },
      /admits to Redis pods other than the compactor's/,
    ],
    [
      'Redis as root, writable, with capabilities',
      'shared-redis.yaml',
      (docs) => {
        const s = find(docs, 'StatefulSet', 'compactor-redis').spec.template.spec;
        delete s.securityContext;
        delete s.containers[0].securityContext;
      },
      /non-root[\s\S]*read-only root filesystem[\s\S]*escalate[\s\S]*capabilities[\s\S]*seccompProfile[\s\S]*fsGroup/,
    ],
    [
      'a misspelt variable',
      'shared-redis.yaml',
      (docs) => {
        find(docs, 'Deployment', 'compactor').spec.template.spec.containers[0].env.push({
          name: 'COMPACTOR_API_KEY',
          value: 'x',
        });
      },
      /COMPACTOR_API_KEY is not a configuration variable/,
    ],
  ];
  for (const [name, file, edit, expected] of cases) {
    const { text, docs } = edited(file, edit);
    t.match(manifestProblems(text, docs).join('\n'), expected, name);
  }

  const { docs } = edited('shared-redis.yaml', (docs) => {
    find(docs, 'Service', 'compactor').spec.ports[0].port = 'eighty';
  });
  const service = find(docs, 'Service', 'compactor');
  t.not((await kubernetesSchemaProblems(service)).length, 0, 'the Kubernetes schema rejects a port that is not a number');
  t.not((await kubernetesSchemaProblems({ ...service, kind: 'Servic' })).length, 0, 'an unknown kind is rejected');
});

t.test('docker-compose.yml: valid against the Compose Specification, PORT followed, Redis persistent', async (t) => {
  t.same(composeProblems(read('docker-compose.yml')), []);
  const compose = parseDocument(read('docker-compose.yml')).toJS();
  t.match(compose.services.compactor.ports[0], /^\$\{PUBLISH_ADDRESS:-127\.0\.0\.1\}:/, 'published on loopback by default');
  t.equal(compose.services.compactor.environment.COMPACTOR_API_KEYS, `\${COMPACTOR_API_KEYS:-}`, 'keys can be given');
});

t.test('broken compose files are caught', async (t) => {
  const text = read('docker-compose.yml');
  const change = (edit: (doc: ReturnType<typeof parseDocument>) => void) => {
    const doc = parseDocument(text);
    edit(doc);
    return composeProblems(doc.toString()).join('\n');
  };
  t.match(
    change((d) => d.setIn(['services', 'compactor', 'healthcheck', 'test', 3], "fetch('http://127.0.0.1:8080/health/ready')")),
    /healthcheck must read the container PORT/,
  );
  t.match(
    change((d) => d.setIn(['services', 'compactor', 'ports', 0], '8080:8080')),
    /no published port maps to the container's PORT 9090/,
  );
  t.match(
    change((d) => d.setIn(['services', 'compactor', 'ports', 0], `\${PORT:-8080}:\${PORT:-8080}`)),
    /port 8080:8080 is published on every interface with no key/,
  );
  t.match(
    change((d) => d.setIn(['services', 'compactor', 'ports', 0], `0.0.0.0:\${PORT:-8080}:\${PORT:-8080}`)),
    /port 0\.0\.0\.0:8080:8080 is published on every interface with no key/,
  );
  t.match(
    change((d) => d.setIn(['services', 'compactor', 'build'], 5)),
    /compose schema/,
  );
  t.match(
    change((d) => d.setIn(['services', 'redis', 'comand'], ['redis-server'])),
    /compose schema/,
  );
  t.match(
    change((d) => d.setIn(['services', 'redis', 'command', 8], 'allkeys-lru')),
    /noeviction/,
  );
  t.match(
    change((d) => d.setIn(['services', 'redis', 'volumes'], [])),
    /named volume/,
  );
});

t.test('Dockerfile: Node 22, the tested start command, the default port, the healthcheck on PORT', async (t) => {
  const text = read('Dockerfile');
  t.same(dockerfileProblems(text, pkg.scripts.start), []);
  t.equal(pkg.scripts.start, 'node dist/server.js', 'test/system/process.test.ts runs exactly this');
  t.match(
    dockerfileProblems(text.replace('CMD ["node", "dist/server.js"]', 'CMD ["npm", "start"]'), pkg.scripts.start).join(),
    /CMD/,
  );
  t.match(dockerfileProblems(text.replaceAll('node:22-', 'node:20-'), pkg.scripts.start).join(), /Node 22/);
});
