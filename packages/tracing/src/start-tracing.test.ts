import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const INDEX = new URL('./index.ts', import.meta.url).href;

/**
 * Runs `startTracing` in a fresh Node process whose module resolution refuses every
 * OpenTelemetry package but the API, so loading the SDK shows as a failure naming it.
 */
function startInFreshProcess(endpoint: string | undefined) {
  const refuseSdk = `export async function resolve(specifier, context, next) {
    if (specifier.startsWith('@opentelemetry/') && specifier !== '@opentelemetry/api')
      throw new Error('loaded ' + specifier);
    return next(specifier, context);
  }`;
  const script = `
    import { register } from 'node:module';
    register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(refuseSdk)}));
    const { startTracing } = await import(${JSON.stringify(INDEX)});
    const tracing = await startTracing({
      endpoint: process.env.ENDPOINT || undefined,
      serviceName: 'agent-backend-test',
      instanceId: 'test-1',
    });
    console.log(JSON.stringify({ enabled: tracing.enabled }));
    await tracing.close();
  `;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, ENDPOINT: endpoint ?? '' },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('startTracing', () => {
  it('off (no endpoint): does not load the OpenTelemetry SDK at all', () => {
    const off = startInFreshProcess(undefined);
    expect(off.stderr).toBe('');
    expect(off.status).toBe(0);
    expect(JSON.parse(off.stdout)).toEqual({ enabled: false });
  });

  it('on: loads the Node.js SDK (the check above would see it)', () => {
    const on = startInFreshProcess('http://127.0.0.1:4318');
    expect(on.status).not.toBe(0);
    expect(on.stderr).toContain('loaded @opentelemetry/sdk-node');
  });
});
