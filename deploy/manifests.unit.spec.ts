// The deployment files against the code: every Kubernetes manifest, docker-compose.yml and the
// Dockerfile may name only the image, entry points, ports, probes and environment variables that
// the services really have (ports from the config defaults, variables from the config schema).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EnvVar, ServiceName } from '@keel/runtime';
import { DEFAULT_GRPC_PORTS, ENV_VARS, SERVICE_NAMES, checkEnv, readEnv } from '@keel/runtime';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';

const root = fileURLToPath(new URL('../', import.meta.url));
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

// Loose shapes: the spec checks fields, so it reads the parsed YAML as plain records.
type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const yamlFiles = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? yamlFiles(join(dir, entry.name))
      : entry.name.endsWith('.yaml')
        ? [join(dir, entry.name)]
        : [],
  );

const documentsOf = (path: string): Doc[] => {
  const docs = parseAllDocuments(read(path));
  for (const doc of docs) expect(doc.errors, path).toEqual([]);
  return docs.map((doc) => doc.toJS() as Doc).filter((doc) => doc !== null);
};

const base = yamlFiles('deploy/base')
  .filter((path) => !path.endsWith('kustomization.yaml'))
  .flatMap(documentsOf);
const ofKind = (kind: string): Doc[] => base.filter((doc) => doc.kind === kind);
const named = (kind: string, name: string): Doc | undefined =>
  ofKind(kind).find((doc) => doc.metadata?.name === name);

const schema = new Map<string, EnvVar>(ENV_VARS.map((variable) => [variable.name, variable]));
const readBy = (name: string, service: ServiceName): boolean => {
  const readers = schema.get(name)?.readers;
  return readers === 'all' || (Array.isArray(readers) && readers.includes(service));
};

const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as Doc;
const dockerfile = read('Dockerfile');
const httpPort = readEnv('PORT', {}) as number;
const healthRoutes = [
  ...read('services/gateway/src/health/health.controller.ts').matchAll(/@Get\('([^']+)'\)/g),
].map((match) => `/${match[1]}`);

describe('deploy/ (Kubernetes, kustomize)', () => {
  it('parses, and each kustomization lists files that exist', () => {
    for (const path of yamlFiles('deploy')) documentsOf(path);
    for (const dir of ['deploy/base', 'deploy/overlays/production']) {
      const kustomization = parseYaml(read(`${dir}/kustomization.yaml`)) as Doc;
      const files = [
        ...(kustomization.resources ?? []),
        ...(kustomization.patches ?? []).map((p: Doc) => p.path),
      ];
      for (const file of files) expect(existsSync(join(root, dir, file)), `${dir}/${file}`).toBe(true);
    }
    const listed = (parseYaml(read('deploy/base/kustomization.yaml')) as Doc).resources as string[];
    expect([...listed].sort()).toEqual(
      readdirSync(join(root, 'deploy/base'))
        .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
        .sort(),
    );
  });

  it('runs each service once, from the image and entry point docker-compose.yml and the Dockerfile build', () => {
    const composeImage = String(compose.services.gateway.image).split(':')[0];
    const kustomizeImages = (parseYaml(read('deploy/base/kustomization.yaml')) as Doc).images as Doc[];
    expect(
      ofKind('Deployment')
        .map((doc) => doc.metadata.name)
        .sort(),
    ).toEqual(SERVICE_NAMES.map((service) => `keel-${service}`).sort());
    for (const service of SERVICE_NAMES) {
      const [container, ...others] = named('Deployment', `keel-${service}`)?.spec.template.spec
        .containers as Doc[];
      expect(others).toEqual([]);
      expect(container?.image).toBe(composeImage);
      expect(kustomizeImages.map((image) => image.name)).toContain(container?.image);
      expect(container?.command).toEqual(compose.services[service].command);
      expect(container?.command).toEqual(['node', `services/${service}/dist/main.js`]);
      expect(existsSync(join(root, `services/${service}/src/main.ts`))).toBe(true);
      expect(dockerfile).toContain(
        `COPY --from=build /app/services/${service}/dist services/${service}/dist`,
      );
    }
  });

  it('opens the ports the services listen on, and probes the health endpoints they serve', () => {
    for (const service of SERVICE_NAMES) {
      const deployment = named('Deployment', `keel-${service}`) as Doc;
      const container = deployment.spec.template.spec.containers[0] as Doc;
      const ports = new Map<string, number>(
        container.ports.map((port: Doc) => [port.name, port.containerPort]),
      );
      const env = new Map<string, string>(container.env.map((entry: Doc) => [entry.name, entry.value]));
      expect(ports.get('grpc')).toBe(DEFAULT_GRPC_PORTS[service]);
      expect(env.get('GRPC_PORT')).toBe(String(DEFAULT_GRPC_PORTS[service]));
      for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
        const check = container[probe] as Doc;
        if (service === 'gateway') {
          expect(healthRoutes).toContain(check.httpGet.path);
          expect(ports.get(check.httpGet.port)).toBe(httpPort);
        } else {
          expect(check.grpc.port, `${service} ${probe}`).toBe(DEFAULT_GRPC_PORTS[service]);
        }
      }
      // Metrics: the gateway's on its HTTP port, every other service's on METRICS_PORT, named `metrics`.
      const scrape = deployment.spec.template.metadata.annotations as Record<string, string>;
      expect(scrape['prometheus.io/scrape']).toBe('true');
      expect(scrape['prometheus.io/path']).toBe('/metrics');
      if (service === 'gateway') {
        expect(scrape['prometheus.io/port']).toBe(String(httpPort));
      } else {
        expect(env.get('METRICS_PORT')).toBe(scrape['prometheus.io/port']);
        expect(ports.get('metrics')).toBe(Number(scrape['prometheus.io/port']));
        expect(compose.services[service].environment.METRICS_PORT).toBe(env.get('METRICS_PORT'));
      }
      if (service === 'gateway') {
        expect(container.readinessProbe.httpGet.path).toBe('/readyz');
        expect(container.livenessProbe.httpGet.path).toBe('/healthz');
        expect(env.get('PORT')).toBe(String(httpPort));
      }
      expect(Object.keys(container.resources.requests).sort()).toEqual(['cpu', 'memory']);
      expect(Object.keys(container.resources.limits).sort()).toEqual(['cpu', 'memory']);

      const svc = named('Service', `keel-${service}`) as Doc;
      expect(svc.spec.selector).toEqual(deployment.spec.selector.matchLabels);
      for (const port of svc.spec.ports as Doc[]) expect(ports.get(port.targetPort)).toBe(port.port);
      const pdb = named('PodDisruptionBudget', `keel-${service}`) as Doc;
      expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    }
    expect(
      ofKind('HorizontalPodAutoscaler')
        .map((hpa) => hpa.spec.scaleTargetRef.name)
        .sort(),
    ).toEqual(['keel-agent', 'keel-gateway']);
  });

  it('sets only environment variables the schema knows, for services that read them, with valid values', () => {
    const config = named('ConfigMap', 'keel-config') as Doc;
    const secret = named('Secret', 'keel-secrets') as Doc;
    for (const name of Object.keys(config.data)) expect(schema.has(name), name).toBe(true);
    expect(() => checkEnv(config.data as Record<string, string>)).not.toThrow();
    for (const [name, value] of Object.entries(secret.stringData as Record<string, string>)) {
      expect(schema.get(name)?.secret, name).toBe(true);
      expect(value === '' || value.includes('REPLACE_ME'), `${name} is a placeholder`).toBe(true);
    }
    for (const service of SERVICE_NAMES) {
      const container = named('Deployment', `keel-${service}`)?.spec.template.spec.containers[0] as Doc;
      expect(container.envFrom).toEqual([{ configMapRef: { name: 'keel-config' } }]);
      for (const entry of container.env as Doc[]) {
        expect(readBy(entry.name, service), `${service} reads ${entry.name}`).toBe(true);
        const ref = entry.valueFrom?.secretKeyRef as Doc | undefined;
        if (ref) {
          expect(ref.name).toBe('keel-secrets');
          expect(Object.keys(secret.stringData)).toContain(ref.key);
        }
      }
    }
    const overlay = documentsOf('deploy/overlays/production/agent-resources.yaml')[0] as Doc;
    for (const entry of overlay.spec.template.spec.containers[0].env as Doc[]) {
      expect(readBy(entry.name, 'agent'), entry.name).toBe(true);
      expect(() => checkEnv({ [entry.name]: entry.value })).not.toThrow();
    }
  });
});

const composePlugin = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0;

describe('docker-compose.yml and the Dockerfile', () => {
  it.skipIf(!composePlugin)(
    '`docker compose config` accepts the file (skipped where the docker compose plugin is absent)',
    () => {
      const result = spawnSync('docker', ['compose', 'config', '--quiet'], { cwd: root, encoding: 'utf8' });
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
  );

  it('runs NATS with JetStream on a volume, a MongoDB replica set on a volume, and the five services', () => {
    expect(compose.services.nats.volumes).toContain('nats-data:/data');
    expect(read('deploy/nats/nats-compose.conf')).toMatch(/jetstream \{\s*store_dir: \/data/);
    expect(compose.services.mongo.command).toEqual(expect.arrayContaining(['--replSet', 'rs0']));
    expect(compose.services.mongo.volumes).toContain('mongo-data:/data/db');
    for (const infra of ['nats', 'mongo']) expect(compose.services[infra].healthcheck.test).toBeDefined();
    for (const service of SERVICE_NAMES) {
      const entry = compose.services[service] as Doc;
      expect(entry.command).toEqual(['node', `services/${service}/dist/main.js`]);
      expect(entry.depends_on.nats.condition).toBe('service_healthy');
      expect(entry.depends_on.mongo.condition).toBe('service_healthy');
      expect(entry.healthcheck.test.join(' ')).toMatch(
        service === 'gateway' ? /\/readyz/ : /health-probe\.js/,
      );
      expect(entry.environment.GRPC_PORT).toBe(String(DEFAULT_GRPC_PORTS[service]));
      for (const name of Object.keys(entry.environment)) {
        expect(readBy(name, service), `${service} reads ${name}`).toBe(true);
      }
    }
    expect(compose.services.gateway.ports).toContain(`${httpPort}:${httpPort}`);
    expect(compose.services.gateway.environment.AGENT_GRPC_URL).toBe(`agent:${DEFAULT_GRPC_PORTS.agent}`);
  });

  it('builds in two stages on the Node major the repo pins: production dependencies only, non-root, every workspace copied', () => {
    const pinned = (JSON.parse(read('package.json')) as { devDependencies: Record<string, string> })
      .devDependencies.node;
    const major = /^(\d+)\./.exec(pinned ?? '')?.[1];
    expect(major, 'package.json devDependencies.node').toBeDefined();
    expect(dockerfile).toMatch(new RegExp(`^FROM node:${major}-bookworm-slim AS build$`, 'm'));
    expect(dockerfile).toMatch(new RegExp(`^FROM node:${major}-bookworm-slim AS runtime$`, 'm'));
    const runtimeStage = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    expect(runtimeStage).toMatch(/RUN npm ci --omit=dev/);
    expect(runtimeStage).toMatch(/^USER node$/m);
    expect(runtimeStage).toContain('COPY --from=build /app/packages/runtime/dist packages/runtime/dist');
    // Files the services read at run time, besides their dist: the protos and the price catalogue.
    expect(runtimeStage).toContain('COPY --from=build /app/proto/keel proto/keel');
    expect(read('services/pricing/src/catalogue/catalogue-file.ts')).toContain(
      "'../../catalogue/models.json'",
    );
    expect(runtimeStage).toContain(
      'COPY --from=build /app/services/pricing/catalogue services/pricing/catalogue',
    );
    const workspaces = [
      'proto',
      ...['packages', 'services', 'apps'].flatMap((dir) =>
        readdirSync(join(root, dir)).map((name) => `${dir}/${name}`),
      ),
    ].filter((dir) => existsSync(join(root, dir, 'package.json')));
    for (const workspace of workspaces) {
      expect(dockerfile, workspace).toContain(`COPY ${workspace}/package.json ${workspace}/`);
      expect(runtimeStage, workspace).toContain(
        `COPY --from=build /app/${workspace}/package.json ${workspace}/`,
      );
    }
  });
});
