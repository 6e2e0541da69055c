/**
 * The Kubernetes manifests (infra/k8s) rendered with kustomize (kubectl's, when the
 * machine has kubectl; otherwise the base's files parsed as they are, and the overlay is left
 * out: a developer without kubectl still gets the base checked) and checked against the
 * service: every variable they set is one the config schema reads, probes and drain timing match
 * the runtime, and every reference (Services, HPAs, PDBs, Ingress, ServiceMonitor) points at
 * something that exists.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { EnvSchema } from '@agent-backend/config';
import { REPO_ROOT } from '@agent-backend/testing';

interface Resource {
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; namespace?: string };
  spec?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

const kubectl = (() => {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function render(dir: string): Resource[] {
  const path = join(REPO_ROOT, 'infra/k8s', dir);
  let text: string;
  if (kubectl) {
    text = execFileSync('kubectl', ['kustomize', path], { encoding: 'utf8' });
  } else {
    // Without kustomize: the base's resources as written (overlays need kustomize).
    const kustomization = parseAllDocuments(
      readFileSync(join(path, 'kustomization.yaml'), 'utf8'),
    )[0]!.toJS() as {
      resources: string[];
    };
    text = kustomization.resources
      .map((file) => readFileSync(join(path, file), 'utf8'))
      .join('\n---\n');
  }
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as Resource | null)
    .filter((r): r is Resource => r !== null);
}

// In CI the overlay must be rendered too: a machine without kubectl fails here instead of
// checking less without saying so.
if (!kubectl && process.env.CI === 'true')
  throw new Error(
    'kubectl is needed in CI to render infra/k8s/overlays/example (kubectl kustomize)',
  );

/** The keys of `agent-backend-secrets` that infra/k8s/base/kustomization.yaml documents. */
const SECRET_KEYS = [
  'REDIS_URL',
  'DATABASE_URL',
  'INTERNAL_API_SECRET',
  'METRICS_TOKEN',
  'ADMIN_TOKEN',
];

const variants = kubectl ? ['base', 'overlays/example'] : ['base'];

describe.each(variants)('Kubernetes manifests: %s', (variant) => {
  const resources = render(variant);
  const ofKind = (kind: string) => resources.filter((r) => r.kind === kind);
  const named = (kind: string, name: string) => ofKind(kind).find((r) => r.metadata.name === name);
  const deployments = ofKind('Deployment');
  const config = named('ConfigMap', 'agent-backend-config')!;

  it('has api, gateway and worker Deployments running their roles', () => {
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
      'agent-backend-api',
      'agent-backend-gateway',
      'agent-backend-worker',
    ]);
    for (const deployment of deployments) {
      const [container] = deployment.spec.template.spec.containers;
      const role = deployment.metadata.name.replace('agent-backend-', '');
      expect(container.command).toEqual(['node', `apps/${role}/dist/main.js`]);
      expect(existsSync(join(REPO_ROOT, `apps/${role}/src/main.ts`))).toBe(true);
    }
  });

  it('sets only variables the config schema reads', () => {
    const known = new Set(Object.keys(EnvSchema.shape));
    const set = new Set<string>(Object.keys(config.data ?? {}));
    for (const deployment of deployments) {
      for (const container of deployment.spec.template.spec.containers) {
        for (const env of container.env ?? []) set.add(env.name);
        for (const from of container.envFrom ?? []) {
          // The Secrets are the operator's (no placeholders in the base): their documented keys.
          if (from.secretRef) {
            expect(from.secretRef.name).toBe('agent-backend-secrets');
            for (const key of SECRET_KEYS) set.add(key);
            continue;
          }
          const source = named('ConfigMap', from.configMapRef.name);
          expect(source, JSON.stringify(from)).toBeDefined();
          for (const key of Object.keys(source!.data ?? {})) set.add(key);
        }
      }
    }
    expect([...set].filter((name) => !known.has(name))).toEqual([]);
    expect(set).toContain('DATABASE_URL');
    expect(set).toContain('REDIS_URL');
  });

  it('probes /readyz and /healthz, and lets the drain finish before the kill', () => {
    const shutdownSeconds = Number(config.data!.SHUTDOWN_TIMEOUT_MS) / 1000;
    for (const deployment of deployments) {
      const pod = deployment.spec.template.spec;
      const [container] = pod.containers;
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      const preStop = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStop + shutdownSeconds);
      expect(container.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
      // Pod Security "restricted".
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(container.startupProbe.httpGet.path).toBe('/healthz');
      // Selectors name the application and the release, not only the component.
      expect(Object.keys(deployment.spec.selector.matchLabels).sort()).toEqual([
        'app.kubernetes.io/component',
        'app.kubernetes.io/instance',
        'app.kubernetes.io/name',
      ]);
      expect(pod.topologySpreadConstraints[0].labelSelector.matchLabels).toEqual(
        deployment.spec.selector.matchLabels,
      );
      // Scratch space for the read-only root: DATA_DIR lives under it.
      expect(container.volumeMounts).toEqual(
        expect.arrayContaining([expect.objectContaining({ mountPath: '/tmp' })]),
      );
      expect(config.data!.DATA_DIR).toMatch(/^\/tmp\//);
    }
    // api and gateway are behind the load balancer: preStop lets endpoints drop them first.
    for (const name of ['agent-backend-api', 'agent-backend-gateway']) {
      const [container] = named('Deployment', name)!.spec.template.spec.containers;
      expect(container.lifecycle.preStop.sleep.seconds).toBeGreaterThan(0);
    }
  });

  it('points Services, autoscalers, budgets and the ServiceMonitor at what exists', () => {
    const podLabels = deployments.map((d) => d.spec.template.metadata.labels);
    const selects = (selector: Record<string, string>) =>
      podLabels.some((labels) => Object.entries(selector).every(([k, v]) => labels[k] === v));
    for (const service of ofKind('Service')) {
      expect(selects(service.spec.selector), service.metadata.name).toBe(true);
    }
    const hpas = ofKind('HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual([
      'agent-backend-api',
      'agent-backend-gateway',
    ]);
    for (const hpa of hpas) expect(named('Deployment', hpa.spec.scaleTargetRef.name)).toBeDefined();
    const pdbs = ofKind('PodDisruptionBudget');
    expect(pdbs).toHaveLength(2);
    for (const pdb of pdbs) expect(selects(pdb.spec.selector.matchLabels)).toBe(true);
    const [monitor] = ofKind('ServiceMonitor');
    expect(monitor!.spec.endpoints[0]).toMatchObject({ port: 'http', path: '/metrics' });
    // The scraper presents METRICS_TOKEN from the Secret the pods read it from.
    const credentials = monitor!.spec.endpoints[0].authorization.credentials;
    expect(monitor!.spec.endpoints[0].authorization.type).toBe('Bearer');
    expect(credentials.key).toBe('METRICS_TOKEN');
    expect(credentials.name).toBe('agent-backend-secrets');
    expect(ofKind('Secret')).toEqual([]);
    const monitored = ofKind('Service').filter((s) =>
      Object.entries(monitor!.spec.selector.matchLabels as Record<string, string>).every(
        ([k, v]) => s.metadata.labels?.[k] === v,
      ),
    );
    if (kubectl) expect(monitored.map((s) => s.metadata.name).sort()).toHaveLength(3);
    for (const ingress of ofKind('Ingress')) {
      for (const rule of ingress.spec.rules) {
        for (const path of rule.http.paths) {
          expect(named('Service', path.backend.service.name)).toBeDefined();
        }
      }
    }
  });

  it.runIf(variant === 'overlays/example')('pins the image and namespace in the overlay', () => {
    for (const deployment of deployments) {
      expect(deployment.metadata.namespace).toBe('agents');
      expect(deployment.spec.template.spec.containers[0].image).toBe(
        'registry.example.com/agent-backend:0.1.0',
      );
    }
    expect(config.data!.LOG_LEVEL).toBe('warn');
    expect(named('Deployment', 'agent-backend-worker')!.spec.replicas).toBe(2);
  });
});
