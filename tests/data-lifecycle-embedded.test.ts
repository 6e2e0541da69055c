import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEntry, startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { json, post, requireBuild, tempDir } from './helpers.js';
import { eventually, openSocket } from './ws-client.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';
const TOKEN_REVOKE = 'apps/all-in-one/dist/token-revoke.js';
const KEYS_ROTATE = 'apps/all-in-one/dist/keys-rotate.js';
const ADMIN_TOKEN = 'operator-credential-0123456789';

interface AuditPage {
  events: {
    action: string;
    actor: string;
    user_id: string | null;
    details: Record<string, unknown>;
  }[];
  next_cursor: string | null;
}

/**
 * The audit log, the operator API and the retention sweep on the embedded all-in-one (PGlite,
 * in-process bus): the operator's commands record through the running service's control socket,
 * and the sweep runs in process.
 */
describe('audit log, operator API and retention on the all-in-one', () => {
  const dataDir = tempDir('lifecycle');
  const env = {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ADMIN_TOKEN,
    DEV_TOKENS: 'true',
    RETENTION_SWEEP_INTERVAL_MS: '1000',
  };
  let service: ServiceProcess;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const operatorAudit = async (query: string) =>
    (await json(await fetch(`${service.url}/api/operator/audit?${query}`, { headers: admin })))
      .body as AuditPage;

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE, TOKEN_REVOKE, KEYS_ROTATE);
    service = await startServiceProcess({ entry: MAIN, env });
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
  });

  it('records tokens issued by token:issue and the dev route, and the caller reads them', async () => {
    const issued = await runEntry(TOKEN_ISSUE, ['ada'], env);
    expect(issued.code).toBe(0);
    const { accessToken, refreshToken } = JSON.parse(issued.stdout) as Record<string, string>;
    const dev = await post(`${service.url}/api/dev/tokens`, { user_id: 'ada' });
    expect(dev.status).toBe(200);
    const mine = await json(
      await fetch(`${service.url}/api/me/audit`, {
        headers: { authorization: `Bearer ${accessToken}` },
      }),
    );
    expect(mine.status).toBe(200);
    const page = mine.body as AuditPage;
    expect(page.events.map((e) => [e.action, e.actor, e.details.via])).toEqual([
      ['token.issued', 'anyone', 'dev_tokens'],
      ['token.issued', 'cli', 'token:issue'],
    ]);
    expect(JSON.stringify(page)).not.toContain(refreshToken);
  });

  it("the operator API refuses a user's token, and looks up, disconnects and revokes", async () => {
    const { accessToken } = JSON.parse((await runEntry(TOKEN_ISSUE, ['bo'], env)).stdout) as {
      accessToken: string;
    };
    const refused = await fetch(`${service.url}/api/operator/users/bo`, {
      headers: { authorization: `Bearer ${accessToken}` },
    });
    expect(refused.status).toBe(401);
    const looked = await json(
      await fetch(`${service.url}/api/operator/users/bo`, { headers: admin }),
    );
    expect(looked).toMatchObject({
      status: 200,
      body: { user_id: 'bo', sessions: { count: 0 }, tokens: { live_refresh_tokens: 1 } },
    });

    const socket = await openSocket(
      `${service.url.replace('http', 'ws')}/ws/web?user_id=bo&token=${accessToken}`,
    );
    const cut = await json(
      await post(`${service.url}/api/operator/users/bo/disconnect`, {}, admin),
    );
    expect(cut).toEqual({ status: 200, body: { user_id: 'bo', gateways_reached: 1 } });
    expect((await socket.closed).code).toBe(4010);

    const revoked = await runEntry(TOKEN_REVOKE, ['bo'], env);
    expect(revoked.code).toBe(0);
    const events = await operatorAudit('user_id=bo');
    expect(events.events.map((e) => [e.action, e.actor]).reverse()).toEqual([
      ['token.issued', 'cli'],
      ['operator.call', 'operator'],
      ['operator.call', 'operator'],
      ['user.tokens_revoked', 'cli'],
    ]);
  });

  it('records a key rotation', async () => {
    const rotated = await runEntry(KEYS_ROTATE, [], env);
    expect(rotated.stderr).toBe('');
    expect(rotated.code).toBe(0);
    const { kid, retired } = JSON.parse(rotated.stdout) as { kid: string; retired: string };
    const events = await operatorAudit('action=key.rotated');
    expect(events.events).toEqual([
      expect.objectContaining({
        action: 'key.rotated',
        actor: 'cli',
        user_id: null,
        details: expect.objectContaining({ kid, retired }) as unknown,
      }),
    ]);
  });

  it('runs the retention sweep in process', async () => {
    await eventually(async () => {
      const metrics = await (await fetch(`${service.url}/metrics`)).text();
      return /agent_backend_retention_sweep_duration_seconds_count\{outcome="ok"[^}]*\} [1-9]/.test(
        metrics,
      );
    }, 20_000);
  });

  it("exports and erases a user's data through the operator API, and the audit log says so", async () => {
    const { accessToken } = JSON.parse((await runEntry(TOKEN_ISSUE, ['cy'], env)).stdout) as {
      accessToken: string;
    };
    const user = { authorization: `Bearer ${accessToken}` };
    const ownExport = await fetch(`${service.url}/api/me/export`, { headers: user });
    expect(ownExport.status).toBe(200);
    await ownExport.arrayBuffer();
    for (const [method, path] of [
      ['GET', '/api/operator/users/cy/export'],
      ['POST', '/api/operator/users/cy/erase'],
    ] as const) {
      expect((await fetch(`${service.url}${path}`, { method, headers: user })).status).toBe(401);
    }
    const exported = await fetch(`${service.url}/api/operator/users/cy/export`, { headers: admin });
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toBe('application/x-tar');
    // tar: each entry's name is the first bytes of its 512-byte header; the manifest comes last.
    const archive = Buffer.from(await exported.arrayBuffer());
    expect(archive.includes(Buffer.from('manifest.json'))).toBe(true);
    expect(archive.includes(Buffer.from('sessions.jsonl'))).toBe(true);
    expect((await operatorAudit('user_id=cy&action=user.data_exported')).events).toMatchObject([
      { actor: 'operator', user_id: 'cy' },
      { actor: 'user', user_id: 'cy' },
    ]);

    const erased = await json(
      await fetch(`${service.url}/api/operator/users/cy/erase`, { method: 'POST', headers: admin }),
    );
    expect(erased.status).toBe(200);
    const body = erased.body as { user_id: string; erasure_id: string; removed: object };
    expect(body).toMatchObject({ user_id: 'cy', status: 'done' });
    expect(body.removed).toMatchObject({ audit_events: expect.any(Number) });
    // The user's events went with their data; the erasure is recorded naming only itself.
    expect((await operatorAudit('user_id=cy')).events).toEqual([]);
    const calls = (await operatorAudit('action=operator.call')).events;
    const eraseCall = (e: (typeof calls)[number]) =>
      e.details.route === '/api/operator/users/:user_id/erase';
    expect(calls.filter(eraseCall)).toMatchObject([
      { user_id: null, details: { params: {}, outcome: 'ok' } },
    ]);
    expect((await operatorAudit('action=user.data_erased')).events).toMatchObject([
      { actor: 'operator', user_id: null, details: { erasure_id: body.erasure_id } },
    ]);
    // Refused at once on this process (the erasure raised the cutoff here).
    const refused = await fetch(`${service.url}/api/me/audit`, { headers: user });
    expect(refused.status).toBe(401);
    // Erasing again removes nothing.
    const again = await json(
      await fetch(`${service.url}/api/operator/users/cy/erase`, { method: 'POST', headers: admin }),
    );
    expect((again.body as { removed: object }).removed).toEqual({});
  });
});
