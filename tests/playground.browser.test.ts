/**
 * Issue 18: the playground in headless Chromium against `pnpm demo` (apps/all-in-one/dist/demo.js)
 * from a fresh data dir, on a phone-sized screen: minting a token, a streamed run of the scripted
 * demo model with todos, a held node tool call approved (and one rejected) with the buttons, a
 * run resumed after a reload, nodes appearing and disappearing, a node tool called by hand,
 * knowledge bases with the chunk preview's boundaries, memories, skills and scheduled tasks, and
 * an axe check of every screen. Screenshots go to artifacts/playground/ (kept by CI).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '@agent-backend/node-client';
import { REPO_ROOT, startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

const DEMO = 'apps/all-in-one/dist/demo.js';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(REPO_ROOT, 'artifacts/playground');
const AXE = readFileSync(join(REPO_ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
const SECRET = 'playground-internal-secret';

describe('playground (pnpm demo) in headless Chromium', () => {
  let demo: ServiceProcess;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    requireBuild(DEMO, 'packages/playground/dist/app.js', 'packages/client/dist/index.js');
    mkdirSync(SHOTS, { recursive: true });
    demo = await startServiceProcess({
      entry: DEMO,
      env: { DATA_DIR: tempDir('playground'), LOG_LEVEL: 'info', INTERNAL_API_SECRET: SECRET },
      timeoutMs: 120_000,
    });
    await until(() => demo.stderr.some((line) => line.includes('Demo ready')), 60_000);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    // A phone-sized screen; CSP bypassed only so the test can inject axe-core.
    context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      bypassCSP: true,
    });
    page = await context.newPage();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await demo?.stop('SIGTERM');
  });

  const shot = (name: string) =>
    page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const tab = (name: string) => page.getByRole('button', { name, exact: true }).click();

  /** axe-core's violations on the current screen, as `rule: selectors`. */
  async function axeViolations(): Promise<string[]> {
    if (!(await page.evaluate('typeof window.axe !== "undefined"'))) {
      await page.addScriptTag({ content: AXE });
    }
    const result = (await page.evaluate(
      `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`,
    )) as string[];
    return result;
  }

  it('GET / opens the playground, which mints a token in dev mode', async () => {
    await page.goto(`${demo.url}/`);
    expect(new URL(page.url()).pathname).toBe('/playground/');
    await page.waitForSelector('body[data-ready="true"]');
    expect(await axeViolations()).toEqual([]);
    await shot('sign-in');
    await page.getByLabel('User id').fill('demo');
    await page.getByRole('button', { name: 'Mint a token' }).click();
    await expect.poll(() => page.locator('#identity').textContent()).toBe('Signed in as demo');
    expect(await page.locator('#panel-chat').isVisible()).toBe(true);
    // First visit with a demo model: it is preselected and labelled as scripted.
    expect(await page.locator('#demo-label').isVisible()).toBe(true);
    expect(await page.getByLabel('Model name').inputValue()).toBe('demo-scripted');
  });

  it('streams a run, writes todos and holds the node call until Approve is pressed', async () => {
    await page.getByLabel('Message').fill('What is on my screen?');
    await page.getByRole('button', { name: 'Send' }).click();
    const approval = page.locator('[data-event="approval_request"]').last();
    await approval.waitFor();
    expect(await approval.locator('h3').textContent()).toBe('Approve screenshot?');
    expect(await approval.locator('.countdown').textContent()).toMatch(/^Expires in \d+ s$/);
    expect(await page.locator('#todos li').allTextContents()).toEqual([
      'Ask the desktop node for a screenshot (in progress)',
      'Tell you what came back (pending)',
    ]);
    expect(await axeViolations()).toEqual([]);
    await shot('chat-approval');

    await approval.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.locator('[data-event="done"]').first().waitFor({ timeout: 20_000 });
    expect(await approval.getAttribute('data-outcome')).toBe('approved');
    const result = page.locator('[data-event="tool_result"]', { hasText: 'screenshot' });
    expect(await result.locator('img').count()).toBe(1);
    const answer = await page.locator('.bubble.assistant').last().textContent();
    expect(answer).toContain('This is the scripted demo model');
    expect(answer).toContain('screenshot taken (64x40, generated)');
    expect(await page.locator('#todos li.todo-completed').count()).toBe(2);
    await shot('chat-done');
  });

  it('Reject refuses the held call, and the run ends saying so', async () => {
    await page.getByLabel('Message').fill('Try again');
    await page.getByRole('button', { name: 'Send' }).click();
    const approval = page.locator('[data-event="approval_request"]').nth(1);
    await approval.getByRole('button', { name: 'Reject' }).click();
    await page.locator('[data-event="done"]').nth(1).waitFor({ timeout: 20_000 });
    expect(await approval.getAttribute('data-outcome')).toBe('rejected');
    expect(await page.locator('.bubble.assistant').last().textContent()).toContain(
      "The desktop node's screenshot answered",
    );
  });

  it('resumes a streaming run after a reload (Last-Event-ID) and can still decide it', async () => {
    await page.getByLabel('Message').fill('And once more');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('[data-event="approval_request"]').nth(2).waitFor();
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    // The transcript comes back from local storage, the stream from the service.
    const approval = page.locator('[data-event="approval_request"]').nth(2);
    await approval.waitFor();
    expect(await page.getByRole('button', { name: 'Stop' }).isEnabled()).toBe(true);
    await approval.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.locator('[data-event="done"]').nth(2).waitFor({ timeout: 20_000 });
    expect(await approval.getAttribute('data-outcome')).toBe('approved');
    expect(await page.locator('.bubble.user').count()).toBe(3);
  });

  it('shows nodes as they come and go, and calls a node tool by hand', async () => {
    await tab('Nodes');
    const desktop = page.locator('[data-node-id="desktop_demo"]');
    await desktop.waitFor();
    expect(await desktop.textContent()).toContain('Demo desktop (simulated)');
    expect(await desktop.locator('.online').textContent()).toBe('online');

    const tokens = (await (
      await fetch(`${demo.url}/api/dev/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'demo' }),
      })
    ).json()) as { accessToken: string };
    const extension = new NodeClient({
      url: demo.url,
      kind: 'extension',
      userId: 'demo',
      token: tokens.accessToken,
      node: { name: 'Test extension' },
      tools: { ping: { description: 'answers pong', handler: () => 'pong' } },
    });
    await extension.start();
    const card = page.locator('[data-node-id="ext_demo"]');
    await card.waitFor({ timeout: 15_000 });
    expect(await card.locator('.online').textContent()).toBe('online');
    await extension.close();
    await expect
      .poll(
        async () => (await card.count()) === 0 || (await card.locator('.offline').count()) > 0,
        {
          timeout: 15_000,
        },
      )
      .toBe(true);

    await page.getByLabel('Node', { exact: true }).selectOption('desktop_demo');
    await page.getByLabel('Tool', { exact: true }).selectOption('add');
    await page.getByLabel('Arguments (JSON)').fill('{"a": 2, "b": 40}');
    await page.getByRole('button', { name: 'Call' }).click();
    const result = page.locator('[data-event="node_result"]');
    await result.waitFor();
    expect(await result.locator('pre').textContent()).toBe('42');
    expect(await axeViolations()).toEqual([]);
    await shot('nodes');
  });

  it('manages a knowledge base and draws the chunk boundaries of a preview', async () => {
    await tab('Knowledge');
    await page.getByLabel('New knowledge base').fill('Handbook');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect
      .poll(() => page.locator('#kb-select option').allTextContents())
      .toEqual(['Handbook']);
    await page.getByLabel('Name', { exact: true }).fill('holidays.md');
    await page
      .getByLabel('Content', { exact: true })
      .fill('# Holidays\n\nEvery employee gets twenty-eight days of paid leave a year.');
    await page.getByRole('button', { name: 'Upload' }).first().click();
    await page.locator('#kb-documents [data-status="ready"]').waitFor({ timeout: 30_000 });
    await page.getByLabel('Search', { exact: true }).fill('paid leave');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.locator('#kb-hits').textContent()).toContain('twenty-eight days');

    const text = Array.from(
      { length: 6 },
      (_, i) =>
        `Paragraph ${i + 1} says something about the topic at some length, ${'word '.repeat(12)}`,
    ).join('\n\n');
    await page.getByLabel('Text', { exact: true }).fill(text);
    await page.getByLabel('Chunk size').fill('200');
    await page.getByLabel('Overlap').fill('40');
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.locator('.chunked').waitFor();
    const expected = (await (
      await fetch(`${demo.url}/api/knowledge-base/preview-chunks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${await accessToken(demo.url)}`,
        },
        body: JSON.stringify({ content: text, chunk_size: 200, chunk_overlap: 40 }),
      })
    ).json()) as { total: number; chunks: { content: string }[] };
    expect(expected.total).toBeGreaterThan(2);
    expect(await page.locator('.chunked .boundary').count()).toBe(expected.total);
    // Each shaded stretch starts with its chunk's text.
    const stretches = await page.locator('.chunked .chunk').allTextContents();
    stretches.forEach((stretch, i) =>
      expect(stretch.startsWith(expected.chunks[i]!.content.slice(0, 30))).toBe(true),
    );
    expect(await axeViolations()).toEqual([]);
    await shot('knowledge');
  });

  it('lists skills, memories and scheduled tasks', async () => {
    await tab('Memories & skills');
    await page.locator('#memory-list li').first().waitFor();
    expect(await page.locator('#memory-list').textContent()).toContain('Nothing remembered yet');
    await page
      .getByLabel('Upload a skill (SKILL.md)')
      .fill('---\nname: haiku\ndescription: Answers in a haiku.\n---\nWrite a haiku.\n');
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.locator('#skill-list', { hasText: 'haiku (user)' }).waitFor();
    expect(await axeViolations()).toEqual([]);
    await shot('memories-skills');

    const sync = await fetch(`${demo.url}/scheduled-task/sync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-internal-secret': SECRET },
      body: JSON.stringify({
        action: 'add',
        task_id: 'morning-news',
        task: {
          id: 'morning-news',
          user_id: 'demo',
          title: 'Morning news',
          prompt: 'Summarize the news',
          repeat_type: 'daily',
          scheduled_time: '07:30',
        },
      }),
    });
    expect(sync.status).toBe(200);
    await tab('Scheduled tasks');
    const task = page.locator('#task-list li.card').first();
    await task.waitFor();
    expect(await task.locator('h3').textContent()).toBe('Morning news (pending)');
    expect(await axeViolations()).toEqual([]);
    await shot('tasks');
  });

  it('fits a phone-sized screen: nothing scrolls sideways', async () => {
    for (const name of ['Chat', 'Nodes', 'Knowledge', 'Memories & skills', 'Scheduled tasks']) {
      await tab(name);
      const overflow = (await page.evaluate(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      )) as number;
      expect(overflow, name).toBeLessThanOrEqual(0);
    }
  });
});

async function accessToken(base: string): Promise<string> {
  const response = await fetch(`${base}/api/dev/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user_id: 'demo' }),
  });
  return ((await response.json()) as { accessToken: string }).accessToken;
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
