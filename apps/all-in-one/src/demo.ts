import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEMO_MODEL_NAME } from '@agent-backend/api';
import { loadConfigOrExit } from '@agent-backend/config';
import { demoTools, NodeClient } from '@agent-backend/node-client';
import type { DevTokenResponse, RefreshResponse } from '@agent-backend/protocol';
import { startDemoModel } from './demo-model.js';

/** The user the demo signs its simulated node in as (the playground mints the same one). */
const DEMO_USER = 'demo';
const READY_TIMEOUT_MS = 120_000;

let service: ReturnType<typeof spawn> | undefined;
let node: NodeClient | undefined;

/**
 * `pnpm demo`: the all-in-one with everything a first look needs and no API key: the scripted
 * demo model (an OpenAI-compatible server on loopback, allowed through `LLM_ALLOWED_ORIGINS`
 * and offered by the playground, also the default model of scheduled tasks unless
 * `DEFAULT_LLM_BASE_URL` is set), `DEV_TOKENS=true` so the playground mints tokens, and one
 * simulated desktop node of user `demo`. Development only; see docs/playground.md.
 */
async function main(): Promise<void> {
  const model = await startDemoModel();
  const origin = new URL(model.baseUrl).origin;
  const allowed = [process.env.LLM_ALLOWED_ORIGINS, origin].filter(Boolean).join(',');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DEV_TOKENS: 'true',
    LLM_ALLOWED_ORIGINS: allowed,
    PLAYGROUND_DEMO_MODEL_URL: model.baseUrl,
    // Scheduled tasks (and chat-platform messages) run on the default model: the demo model,
    // unless one is configured.
    ...(process.env.DEFAULT_LLM_BASE_URL
      ? {}
      : {
          DEFAULT_LLM_BASE_URL: model.baseUrl,
          DEFAULT_LLM_API_KEY: 'demo',
          DEFAULT_LLM_MODEL: DEMO_MODEL_NAME,
        }),
  };
  // Anyone who reaches the demo can mint tokens (DEV_TOKENS): it listens on loopback only,
  // unless HOST says otherwise.
  if (!process.env.HOST) env.HOST = '127.0.0.1';
  const config = loadConfigOrExit('all-in-one', env);
  const host = ['0.0.0.0', '::'].includes(config.HOST) ? '127.0.0.1' : config.HOST;
  // The node and the printed address need the port: `PORT=0` gets a free one chosen here.
  const port = config.PORT === 0 ? await freePort(config.HOST) : config.PORT;
  env.PORT = String(port);
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  // The service gets this process's Node flags (the bootstrap's --max-semi-space-size).
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  service = spawn(process.execPath, [...process.execArgv, main], {
    env,
    stdio: 'inherit',
  });
  const stop = async (signal: NodeJS.Signals) => {
    await node?.close().catch(() => undefined);
    service?.kill(signal);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void stop(signal));
  service.on('exit', (code, signal) => {
    void model.close();
    void node?.close().catch(() => undefined);
    process.exit(code ?? (signal ? 128 : 1));
  });

  await waitReady(base);
  const minted = await post<DevTokenResponse>(`${base}/api/dev/tokens`, { user_id: DEMO_USER });
  node = new NodeClient({
    url: base,
    kind: 'desktop',
    userId: DEMO_USER,
    // An access token from the refresh token at each connection (they expire; the node stays).
    getToken: async () =>
      (
        await post<RefreshResponse>(`${base}/api/auth/refresh`, {
          refreshToken: minted.refreshToken,
        })
      ).accessToken,
    node: {
      name: 'Demo desktop (simulated)',
      appVersion: 'demo/0.1.0',
      capabilities: ['tools'],
    },
    tools: demoTools(),
  });
  await node.start();
  process.stderr.write(
    `\nDemo ready: open ${base}/ and press "Mint a token" (user ${DEMO_USER}).\n` +
      `The model is scripted (no API key, no AI); a simulated desktop node is connected.\n` +
      `${reach(config.HOST)}\n\n`,
  );
}

/** Who can reach the demo, and so mint tokens on it. */
function reach(listenHost: string): string {
  if (['127.0.0.1', '::1', 'localhost'].includes(listenHost)) {
    return `Listening on ${listenHost} only: other machines cannot reach it (HOST=0.0.0.0 opens it to them, and lets them mint tokens).`;
  }
  return `Listening on ${listenHost} (HOST): every machine that reaches this address can mint tokens here.`;
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function waitReady(base: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await sleep(250);
  }
  throw new Error(`the service did not become ready at ${base} within ${READY_TIMEOUT_MS} ms`);
}

async function post<T>(url: string, body: unknown): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

main().catch((error: unknown) => {
  process.stderr.write(`demo: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
  service?.kill('SIGTERM');
});
