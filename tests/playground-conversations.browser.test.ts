/**
 * The playground's conversation list and Stop button in headless Chromium against `pnpm demo`
 * (apps/all-in-one/dist/demo.js): Stop cancels the run on the service
 * (`POST /api/agent/runs/:run_id/cancel`, the stream ends with `run_aborted`); the list shows
 * the user's sessions from the service, opens one (its stored messages in the transcript),
 * renames one, survives a reload, and deletes one.
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AgentRun, SessionList } from '@agent-backend/protocol';
import { startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

const DEMO = 'apps/all-in-one/dist/demo.js';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// The demo's simulated desktop node is this user's: the demo model's node call waits on it.
const USER = 'demo';

describe('playground conversation list and Stop in headless Chromium', () => {
  let demo: ServiceProcess;
  let browser: Browser;
  let page: Page;
  /** `METHOD path` of every request the page sent to the API. */
  const sent: string[] = [];

  /** The service's answer to `path` for the test's user (a token of its own). */
  const api = async <T>(path: string): Promise<T> => {
    const minted = await fetch(`${demo.url}/api/dev/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: USER }),
    });
    const { accessToken } = (await minted.json()) as { accessToken: string };
    const response = await fetch(`${demo.url}${path}`, {
      headers: { authorization: `Bearer ${accessToken}` },
    });
    return (await response.json()) as T;
  };
  const titles = () => page.locator('#conversation-list li button.link').allTextContents();
  const send = async (message: string) => {
    await page.getByLabel('Message').fill(message);
    await page.getByRole('button', { name: 'Send' }).click();
  };

  beforeAll(async () => {
    requireBuild(DEMO, 'packages/playground/dist/app.js', 'packages/client/dist/index.js');
    demo = await startServiceProcess({
      entry: DEMO,
      env: { DATA_DIR: tempDir('playground-conversations'), LOG_LEVEL: 'info' },
      timeoutMs: 120_000,
    });
    await vi.waitFor(
      () => expect(demo.stderr.some((line) => line.includes('Demo ready'))).toBe(true),
      { timeout: 60_000, interval: 100 },
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname.startsWith('/api/')) sent.push(`${request.method()} ${url.pathname}`);
    });
    await page.goto(`${demo.url}/playground/`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.getByLabel('User id').fill(USER);
    await page.getByRole('button', { name: 'Mint a token' }).click();
    await page.locator('#identity', { hasText: `Signed in as ${USER}` }).waitFor();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await demo?.stop('SIGTERM');
  });

  it('Stop cancels the run on the service; the run is listed and ends with run_aborted', async () => {
    await expect
      .poll(() => page.locator('#conversation-list').textContent())
      .toBe('No conversation yet.');
    await send('What is on my screen?');
    // The demo model's node call waits for approval: the run is still going.
    await page.locator('[data-event="approval_request"]').waitFor();
    await expect.poll(titles).toEqual(['What is on my screen?']);
    await page.getByRole('button', { name: 'Stop' }).click();
    const error = page.locator('[data-event="error"]');
    await error.waitFor({ timeout: 20_000 });
    expect(await error.textContent()).toContain('run_aborted');
    const cancel = sent.find((line) => /^POST \/api\/agent\/runs\/[^/]+\/cancel$/.test(line));
    expect(cancel).toBeDefined();
    const runId = cancel!.split('/')[4]!;
    const run = await api<AgentRun>(`/api/agent/runs/${runId}`);
    expect(run).toMatchObject({ status: 'aborted', error: { code: 'run_aborted' } });
    expect(await page.getByRole('button', { name: 'Stop' }).isEnabled()).toBe(false);
  });

  it('opens a listed conversation, renames it, keeps the list across a reload, and deletes one', async () => {
    await page.getByRole('button', { name: 'New conversation' }).click();
    expect(await page.locator('#transcript').textContent()).toBe('');
    // Without approvals the demo run goes through to the end.
    await page.getByLabel('Ask before tools run').uncheck();
    await send('Second chat');
    await page.locator('[data-event="done"]').waitFor({ timeout: 20_000 });
    await expect.poll(titles).toEqual(['Second chat', 'What is on my screen?']);
    expect(await page.locator('#conversation-list li.current button.link').textContent()).toBe(
      'Second chat',
    );

    // Open the first one: its stored messages come back from the service.
    await page.getByRole('button', { name: 'What is on my screen?', exact: true }).click();
    await expect
      .poll(() => page.locator('#transcript .bubble.user').allTextContents())
      .toEqual(['What is on my screen?']);
    expect(await page.locator('#transcript [data-event="tool_call"]').count()).toBeGreaterThan(0);
    expect(await page.locator('#conversation-list li.current button.link').textContent()).toBe(
      'What is on my screen?',
    );

    await page.getByRole('button', { name: 'Rename What is on my screen?' }).click();
    await page.getByLabel('New title').fill('Screen question');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(titles).toEqual(['Second chat', 'Screen question']);

    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    await expect.poll(titles).toEqual(['Second chat', 'Screen question']);
    expect(await page.locator('#conversation-list li.current button.link').textContent()).toBe(
      'Screen question',
    );
    expect(await page.locator('#transcript .bubble.user').allTextContents()).toEqual([
      'What is on my screen?',
    ]);

    await page.getByRole('button', { name: 'Delete Second chat' }).click();
    await expect.poll(titles).toEqual(['Screen question']);
    const listed = await api<SessionList>('/api/agent/sessions');
    expect(listed.sessions.map((s) => s.title)).toEqual(['Screen question']);
    // Deleting the conversation on screen empties the chat.
    await page.getByRole('button', { name: 'Delete Screen question' }).click();
    await expect.poll(titles).toEqual([]);
    expect(await page.locator('#transcript').textContent()).toBe('');
    expect(sent).toContain('DELETE /api/agent/sessions/' + listed.sessions[0]!.session_id);
  });
});
