/**
 * The Helm chart (infra/helm/agent-backend) rendered by `helm template` for its three value sets
 * (ci/: minimal, split with autoscaling, every option): every object validates against the
 * Kubernetes schemas (kubernetes-models, and the Gateway API and Prometheus Operator models for
 * their kinds), every pod template meets Pod Security "restricted", every variable the chart sets
 * is one the config schema reads, selectors and routes point at what exists, and a release
 * without its Secrets does not render.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { EnvSchema } from '@agent-backend/config';
import { REPO_ROOT } from '@agent-backend/testing';
import { helmTemplate } from './helm.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Resource = { apiVersion: string; kind: string; metadata: any; spec?: any; data?: any };

const CHART = join(REPO_ROOT, 'infra/helm/agent-backend');
const VALUE_SETS = readdirSync(join(CHART, 'ci')).sort();

function render(args: string[]): Resource[] {
  return parseAllDocuments(helmTemplate(CHART, args))
    .map((doc) => doc.toJS() as Resource | null)
    .filter((r): r is Resource => r !== null);
}

/** The kubernetes-models class of an object's apiVersion and kind. */
async function modelOf(resource: Resource): Promise<new (data: unknown) => { validate(): void }> {
  const { apiVersion, kind } = resource;
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
  const module =
    group === 'gateway.networking.k8s.io'
      ? `@kubernetes-models/gateway-api/${apiVersion}/${kind}`
      : group === 'monitoring.coreos.com'
        ? `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`
        : `kubernetes-models/${apiVersion}/${kind}`;
  return ((await import(module)) as Record<string, any>)[kind];
}

/** The pod templates of workloads, with the name of what holds them. */
function podTemplates(resources: Resource[]) {
  return resources
    .filter((r) => r.kind === 'Deployment' || r.kind === 'Job')
    .map((r) => ({ owner: `${r.kind}/${r.metadata.name}`, template: r.spec.template }));
}

it('has the three value sets', () => {
  expect(VALUE_SETS).toEqual([
    'all-options-values.yaml',
    'minimal-values.yaml',
    'split-hpa-values.yaml',
  ]);
});

describe.each(VALUE_SETS)('chart rendered with ci/%s', (file) => {
  const resources = render(['-f', join(CHART, 'ci', file)]);
  const ofKind = (kind: string) => resources.filter((r) => r.kind === kind);
  const named = (kind: string, name: string) => ofKind(kind).find((r) => r.metadata.name === name);
  const deployments = ofKind('Deployment');

  it('validates every object against the Kubernetes schemas', async () => {
    for (const resource of resources) {
      const Model = await modelOf(resource);
      expect(Model, `${resource.apiVersion} ${resource.kind}`).toBeTypeOf('function');
      expect(
        () => new Model(resource).validate(),
        `${resource.kind}/${resource.metadata.name}`,
      ).not.toThrow();
    }
  });

  it('meets Pod Security "restricted" on every pod template', () => {
    for (const { owner, template } of podTemplates(resources)) {
      const pod = template.spec;
      expect(pod.securityContext, owner).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(pod.securityContext.runAsUser, owner).toBeGreaterThan(0);
      expect(pod.hostNetwork ?? false).toBe(false);
      expect(pod.hostPID ?? false).toBe(false);
      expect(pod.hostIPC ?? false).toBe(false);
      for (const volume of pod.volumes ?? []) {
        const type = Object.keys(volume).find((k) => k !== 'name');
        expect(['emptyDir', 'secret', 'configMap', 'projected'], owner).toContain(type);
      }
      for (const container of [...pod.containers, ...(pod.initContainers ?? [])]) {
        expect(container.securityContext, owner).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          seccompProfile: { type: 'RuntimeDefault' },
          capabilities: { drop: ['ALL'] },
        });
        expect(container.securityContext.capabilities.add ?? []).toEqual([]);
        expect(container.securityContext.privileged ?? false).toBe(false);
        for (const port of container.ports ?? []) expect(port.hostPort).toBeUndefined();
      }
    }
  });

  it('sets only variables the config schema reads', () => {
    const known = new Set(Object.keys(EnvSchema.shape));
    const set = new Set<string>();
    for (const { template } of podTemplates(resources)) {
      for (const container of template.spec.containers) {
        for (const env of container.env ?? []) set.add(env.name);
        for (const from of container.envFrom ?? []) {
          expect(from.secretRef, 'secrets come one key at a time').toBeUndefined();
          const config = named('ConfigMap', from.configMapRef.name);
          expect(config, from.configMapRef.name).toBeDefined();
          for (const key of Object.keys(config!.data)) set.add(key);
        }
      }
    }
    expect([...set].filter((name) => !known.has(name))).toEqual([]);
    for (const needed of ['REDIS_URL', 'DATABASE_URL', 'MIGRATE_ON_START', 'JWT_PUBLIC_KEY_FILE'])
      expect(set).toContain(needed);
  });

  it('runs each role with probes, a startup probe and the drain inside the grace period', () => {
    expect(deployments.map((d) => d.metadata.labels['app.kubernetes.io/component']).sort()).toEqual(
      ['api', 'gateway', 'worker'],
    );
    const config = ofKind('ConfigMap')[0]!;
    const shutdownSeconds = Number(config.data.SHUTDOWN_TIMEOUT_MS) / 1000;
    for (const deployment of deployments) {
      const role = deployment.metadata.labels['app.kubernetes.io/component'];
      const pod = deployment.spec.template.spec;
      const [container] = pod.containers;
      expect(container.command).toEqual(['node', `apps/${role}/dist/main.js`]);
      expect(existsSync(join(REPO_ROOT, `apps/${role}/src/main.ts`))).toBe(true);
      expect(container.startupProbe.httpGet.path).toBe('/healthz');
      expect(container.startupProbe.failureThreshold).toBeGreaterThan(1);
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      const preStop = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStop + shutdownSeconds);
      expect(pod.automountServiceAccountToken).toBe(false);
      // Only the api mounts the private key.
      const jwt = pod.volumes.find((v: any) => v.name === 'jwt').secret;
      expect(jwt.items === undefined).toBe(role === 'api');
    }
  });

  it('selects by name, instance and component, and spreads replicas across nodes', () => {
    const releaseLabels = {
      'app.kubernetes.io/name': 'agent-backend',
      'app.kubernetes.io/instance': 'release',
    };
    for (const deployment of deployments) {
      const selector = deployment.spec.selector.matchLabels;
      expect(selector).toMatchObject(releaseLabels);
      expect(selector['app.kubernetes.io/component']).toBeTruthy();
      expect(deployment.spec.template.metadata.labels).toMatchObject(selector);
      const [spread] = deployment.spec.template.spec.topologySpreadConstraints;
      expect(spread.labelSelector.matchLabels).toEqual(selector);
      expect(spread.maxSkew).toBe(1);
    }
    const podLabels = deployments.map((d) => d.spec.template.metadata.labels);
    const selects = (selector: Record<string, string>) =>
      podLabels.filter((labels) => Object.entries(selector).every(([k, v]) => labels[k] === v));
    for (const service of ofKind('Service')) {
      expect(service.spec.selector).toMatchObject(releaseLabels);
      expect(selects(service.spec.selector)).toHaveLength(1);
    }
    for (const pdb of ofKind('PodDisruptionBudget'))
      expect(selects(pdb.spec.selector.matchLabels)).toHaveLength(1);
    for (const hpa of ofKind('HorizontalPodAutoscaler')) {
      const target = named('Deployment', hpa.spec.scaleTargetRef.name);
      expect(target).toBeDefined();
      // The autoscaler owns the replica count.
      expect(target!.spec.replicas).toBeUndefined();
    }
  });

  it('routes /ws/ to the gateways and the rest to the api', () => {
    const services = new Set(ofKind('Service').map((s) => s.metadata.name));
    for (const ingress of ofKind('Ingress')) {
      const paths = ingress.spec.rules[0].http.paths;
      expect(paths.map((p: any) => [p.path, p.backend.service.name])).toEqual([
        ['/ws/', expect.stringMatching(/-gateway$/)],
        ['/', expect.stringMatching(/-api$/)],
      ]);
      for (const p of paths) expect(services).toContain(p.backend.service.name);
    }
    for (const route of ofKind('HTTPRoute')) {
      const rules = route.spec.rules.map((r: any) => [
        r.matches[0].path.value,
        r.backendRefs[0].name,
      ]);
      expect(rules).toEqual([
        ['/ws/', expect.stringMatching(/-gateway$/)],
        ['/', expect.stringMatching(/-api$/)],
      ]);
      for (const [, service] of rules) expect(services).toContain(service);
    }
  });

  it('migrates in a pre-install/pre-upgrade Job, or at start when the Job is off', () => {
    const config = ofKind('ConfigMap')[0]!;
    const [job] = ofKind('Job');
    if (config.data.MIGRATE_ON_START === 'false') {
      expect(job!.metadata.annotations['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      const [container] = job!.spec.template.spec.containers;
      expect(container.command).toEqual(['node', 'apps/all-in-one/dist/migrate.js']);
      expect(existsSync(join(REPO_ROOT, 'apps/all-in-one/src/migrate.ts'))).toBe(true);
    } else {
      expect(config.data.MIGRATE_ON_START).toBe('true');
      expect(job).toBeUndefined();
    }
  });
});

describe('NetworkPolicies (ci/all-options-values.yaml)', () => {
  const resources = render(['-f', join(CHART, 'ci/all-options-values.yaml')]);
  const ofKind = (kind: string) => resources.filter((r) => r.kind === kind);
  it('limits traffic with NetworkPolicies: DNS, Redis, PostgreSQL and the listed destinations', () => {
    const [release, edge] = ofKind('NetworkPolicy');
    expect(release!.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    const egressPorts = release!.spec.egress.map((rule: any) => rule.ports.map((p: any) => p.port));
    expect(egressPorts).toEqual([[53, 53], [6379], [5432], [443], [4318]]);
    expect(release!.spec.egress[1].to).toEqual([{ ipBlock: { cidr: '10.20.0.0/24' } }]);
    expect(edge!.spec.podSelector.matchExpressions[0].values).toEqual(['api', 'gateway']);
    // The ServiceMonitor scrapes the metrics port, which the policy opens to Prometheus.
    const [monitor] = ofKind('ServiceMonitor');
    expect(monitor!.spec.endpoints[0].port).toBe('metrics');
    expect(release!.spec.ingress[1].ports[0].port).toBe(9464);
  });
});

describe('a release missing what it needs', () => {
  const fails = (args: string[]) => {
    try {
      render(args);
    } catch (error) {
      return String((error as { stderr?: string }).stderr ?? error);
    }
    throw new Error('rendered');
  };

  it('does not render without the Redis, PostgreSQL and JWT Secrets', () => {
    expect(fails([])).toContain('postgresql.existingSecret is required');
    expect(
      fails(['--set', 'postgresql.existingSecret=pg', '--set', 'jwt.existingSecret=jwt']),
    ).toContain('redis.existingSecret is required');
    expect(
      fails(['--set', 'postgresql.existingSecret=pg', '--set', 'redis.existingSecret=r']),
    ).toContain('jwt.existingSecret is required');
  });

  it('refuses values outside values.schema.json', () => {
    const base = ['-f', join(CHART, 'ci/minimal-values.yaml')];
    expect(fails([...base, '--set', 'api.replica=3'])).toContain("'replica' not allowed");
    expect(fails([...base, '--set', 'topologySpread.whenUnsatisfiable=Sometimes'])).toContain(
      'whenUnsatisfiable',
    );
  });
});
