/**
 * infra/monitoring: the PrometheusRule and the Grafana dashboard against a running service. The
 * all-in-one on Redis (BullMQ, so queue depths exist) and PostgreSQL is started and its
 * `/metrics` scraped on `METRICS_PORT`; every metric an alert expression or a dashboard query
 * names (parsed with the PromQL grammar of Prometheus) must be one it exposes, apart from the
 * scraper's own `up` and kube-state-metrics' series. Each alert has a summary, a description and
 * a runbook link to a section of docs/operations.md; `promtool check rules` passes where the
 * Debian `prometheus` package is installed (CI installs it).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import {
  createTestSchema,
  parsePrometheusText,
  REPO_ROOT,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type PrometheusText,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { requireBuild } from './helpers.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
const rules = parseAllDocuments(
  readFileSync(join(REPO_ROOT, 'infra/monitoring/prometheus-rules.yaml'), 'utf8'),
)[0]!.toJS() as any;
const dashboard = JSON.parse(
  readFileSync(join(REPO_ROOT, 'infra/monitoring/grafana-dashboard.json'), 'utf8'),
) as any;
const alerts: any[] = rules.spec.groups.flatMap((group: any) => group.rules);
const queries: string[] = dashboard.panels.flatMap((panel: any) =>
  (panel.targets ?? []).map((target: any) => target.expr as string),
);
const METRICS_TOKEN = 'monitoring-scrape-token';

/** Metrics not of the service: Prometheus's own `up` and kube-state-metrics' `kube_*`. */
const external = (name: string) => name === 'up' || name.startsWith('kube_');

/** The metric names a PromQL expression selects; throws on a syntax error. */
function metricNames(expr: string): string[] {
  const names: string[] = [];
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) throw new Error(`PromQL syntax error at ${node.from} in: ${expr}`);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector')
        names.push(expr.slice(node.from, node.to));
    },
  });
  expect(names.length, expr).toBeGreaterThan(0);
  return names;
}

/** The series names a family of `# TYPE` exposes (a histogram's `_bucket`, `_count`, `_sum`). */
function exposedNames(metrics: PrometheusText): Set<string> {
  const names = new Set<string>();
  for (const [family, type] of metrics.types) {
    names.add(family);
    if (type === 'histogram' || type === 'summary')
      for (const suffix of ['_bucket', '_count', '_sum']) names.add(family + suffix);
  }
  return names;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('alerts and dashboard against a scraped service', () => {
  let service: ServiceProcess;
  let schema: TestSchema;
  let dataDir: string;
  let metricsPort: number;
  let metrics: PrometheusText;

  beforeAll(async () => {
    requireBuild('apps/all-in-one/dist/main.js');
    schema = await createTestSchema('monitoring');
    dataDir = mkdtempSync(join(tmpdir(), 'monitoring-'));
    metricsPort = await freePort();
    service = await startServiceProcess({
      entry: 'apps/all-in-one/dist/main.js',
      env: {
        REDIS_URL: testRedisUrl(),
        REDIS_KEY_PREFIX: uniquePrefix('monitoring'),
        DATABASE_URL: testDatabaseUrl(),
        DATABASE_SCHEMA: schema.schema,
        DATA_DIR: dataDir,
        METRICS_PORT: String(metricsPort),
        METRICS_TOKEN,
        BUILD_COMMIT: 'c0ffee1',
      },
      timeoutMs: 180_000,
    });
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(res.status).toBe(200);
    metrics = parsePrometheusText(await res.text());
  }, 240_000);
  afterAll(async () => {
    await service?.stop();
    await schema?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('serves /metrics on METRICS_PORT only, with the token, under the application prefix', async () => {
    expect((await fetch(`${service.url}/metrics`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(401);
    const own = [...metrics.types.keys()].filter(
      (name) => !name.startsWith('process_') && !name.startsWith('nodejs_'),
    );
    expect(own.length).toBeGreaterThan(10);
    for (const name of own) expect(name).toMatch(/^agent_backend_/);
    const [build] = metrics.series('agent_backend_build_info');
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8'));
    expect(build!.labels).toMatchObject({ version, commit: 'c0ffee1' });
    expect(build!.value).toBe(1);
  });

  it('alerts name only metrics the service exposes', () => {
    const exposed = exposedNames(metrics);
    expect(alerts.length).toBeGreaterThan(10);
    for (const alert of alerts) {
      const missing = metricNames(String(alert.expr)).filter(
        (name) => !external(name) && !exposed.has(name),
      );
      expect(missing, alert.alert).toEqual([]);
    }
  });

  it('dashboard queries name only metrics the service exposes', () => {
    const exposed = exposedNames(metrics);
    expect(queries.length).toBeGreaterThan(20);
    for (const query of queries) {
      const missing = metricNames(query).filter((name) => !external(name) && !exposed.has(name));
      expect(missing, query).toEqual([]);
    }
  });
});

describe('the alert rules as files', () => {
  const operations = readFileSync(join(REPO_ROOT, 'docs/operations.md'), 'utf8');
  const anchors = new Set(
    [...operations.matchAll(/^#+ (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^a-z0-9 -]/g, '')
        .replace(/ /g, '-'),
    ),
  );

  it('gives every alert a summary, a description and a runbook section in docs/operations.md', () => {
    for (const alert of alerts) {
      expect(alert.annotations.summary, alert.alert).toBeTruthy();
      expect(alert.annotations.description, alert.alert).toBeTruthy();
      const [path, anchor] = String(alert.annotations.runbook_url).split('#');
      expect(path, alert.alert).toBe('docs/operations.md');
      expect(anchors, alert.alert).toContain(anchor);
      expect(alert.labels.severity).toMatch(/^(page|ticket)$/);
    }
    expect(new Set(alerts.map((a) => a.alert)).size).toBe(alerts.length);
  });

  it('validates as a PrometheusRule', async () => {
    const { PrometheusRule } =
      await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule');
    expect(() => new PrometheusRule(rules).validate()).not.toThrow();
  });

  const promtool = existsSync('/usr/bin/promtool');
  // CI installs the Debian package: there the check must run, not be left out silently.
  if (!promtool && process.env.CI === 'true')
    throw new Error('promtool is needed in CI (apt-get install prometheus)');
  it.runIf(promtool)('passes promtool check rules', () => {
    const dir = mkdtempSync(join(tmpdir(), 'promtool-'));
    try {
      const file = join(dir, 'rules.yaml');
      writeFileSync(file, stringify(rules.spec));
      const out = execFileSync('/usr/bin/promtool', ['check', 'rules', file], { encoding: 'utf8' });
      expect(out).toContain(`SUCCESS: ${alerts.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
