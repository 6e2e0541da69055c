/**
 * The playground in headless Chromium against `pnpm demo` (apps/all-in-one/dist/demo.js)
 * from a fresh data dir, on a phone-sized screen: minting a token, a streamed run of the scripted
 * demo model with todos, a held node tool call approved (and one rejected) with the buttons, a
 * run resumed after a reload, a model error, arguments edited before approval, nodes appearing
 * and disappearing, a node tool called by hand, knowledge bases with the chunk preview's
 * boundaries, plan mode with a skill, memories saved and forgotten, a scheduled task confirmed
 * and run, and an axe check of every screen. The screenshots are the ones the README and
 * docs/playground.md show: written to docs/images/playground-*.png on every run.
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
/** Where the README and docs/playground.md link them: each run writes them anew. */
const SHOTS = join(REPO_ROOT, 'docs/images');
const AXE = readFileSync(join(REPO_ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
const SECRET = 'playground-internal-secret';

describe('playground (pnpm demo) in headless Chromium', () => {
  let demo: ServiceProcess;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** Every URL the page requested (HTTP and WebSocket). */
  const requested: string[] = [];
  const written = new Set<string>();

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
    page.on('request', (request) => requested.push(request.url()));
    page.on('websocket', (socket) => requested.push(socket.url()));
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await demo?.stop('SIGTERM');
  });

  const shot = (name: string) => {
    written.add(`playground-${name}.png`);
    return page.screenshot({ path: join(SHOTS, `playground-${name}.png`), fullPage: true });
  };
  const send = async (message: string) => {
    await page.getByLabel('Message').fill(message);
    await page.getByRole('button', { name: 'Send' }).click();
  };
  const runsDone = () => page.locator('[data-event="done"]').count();
  /** The approval card after the `before` ones already shown. */
  const approvalAfter = (before: number) =>
    page.locator('[data-event="approval_request"]').nth(before);
  const approvalsShown = () => page.locator('[data-event="approval_request"]').count();
  /** Waits for the run that made `before` runs finished so far to finish. */
  const nextDone = (before: number) =>
    page.locator('[data-event="done"]').nth(before).waitFor({ timeout: 20_000 });
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

  it('GET / opens the playground: a pasted token signs in, and so does minting one in dev mode', async () => {
    await page.goto(`${demo.url}/`);
    expect(new URL(page.url()).pathname).toBe('/playground/');
    await page.waitForSelector('body[data-ready="true"]');
    expect(await axeViolations()).toEqual([]);
    await shot('sign-in');
    // A token minted elsewhere (as `pnpm token:issue` prints), pasted into the form.
    await page.getByLabel('Access token or refresh token').fill(await accessToken(demo.url));
    await page.getByRole('button', { name: 'Use this token' }).click();
    await expect.poll(() => page.locator('#identity').textContent()).toBe('Signed in as demo');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.locator('#identity').textContent()).toBe('Not signed in');

    await page.getByLabel('User id').fill('demo');
    await page.getByRole('button', { name: 'Mint a token' }).click();
    await expect.poll(() => page.locator('#identity').textContent()).toBe('Signed in as demo');
    expect(await page.locator('#panel-chat').isVisible()).toBe(true);
    // First visit with a demo model: it is preselected and labelled as scripted.
    expect(await page.locator('#demo-label').isVisible()).toBe(true);
    expect(await page.getByLabel('Model name').inputValue()).toBe('demo-scripted');
    // "Skills to use" labels the input beside it, on a row below the checkboxes.
    const box = async (selector: string) => (await page.locator(selector).boundingBox())!;
    const [label, input, checkbox] = await Promise.all(
      ['label[for="skill-names"]', '#skill-names', '#skills-auto'].map(box),
    );
    const middle = (b: { y: number; height: number }) => b.y + b.height / 2;
    expect(Math.abs(middle(label!) - middle(input!))).toBeLessThan(input!.height / 2);
    expect(label!.y).toBeGreaterThanOrEqual(checkbox!.y + checkbox!.height);
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
    await shot('approval');

    await approval.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.locator('[data-event="done"]').first().waitFor({ timeout: 20_000 });
    expect(await approval.getAttribute('data-outcome')).toBe('approved');
    const result = page.locator('[data-event="tool_result"]', { hasText: 'screenshot' });
    expect(await result.locator('img').count()).toBe(1);
    const answer = await page.locator('.bubble.assistant').last().textContent();
    expect(answer).toContain('This is the scripted demo model');
    expect(answer).toContain('screenshot taken (64x40, generated)');
    expect(await page.locator('#todos li.todo-completed').count()).toBe(2);
    await shot('chat');
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

  it('resumes a streaming run after a reload (Last-Event-ID) and can still decide it; the model form is kept', async () => {
    // A field changed by hand, so the values after the reload cannot be the demo preselection.
    await page.getByText('Model', { exact: true }).click();
    await page.getByLabel('API key').fill('key-kept-across-reloads');
    await page.getByLabel('API key').press('Tab');
    const demoBaseUrl = await page.getByLabel('Base URL (OpenAI-compatible)').inputValue();
    expect(demoBaseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    await page.getByLabel('Message').fill('And once more');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('[data-event="approval_request"]').nth(2).waitFor();
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    // The transcript comes back from local storage, the stream from the service.
    const approval = page.locator('[data-event="approval_request"]').nth(2);
    await approval.waitFor();
    expect(await page.getByRole('button', { name: 'Stop' }).isEnabled()).toBe(true);
    expect(await page.getByLabel('Base URL (OpenAI-compatible)').inputValue()).toBe(demoBaseUrl);
    expect(await page.getByLabel('API key').inputValue()).toBe('key-kept-across-reloads');
    expect(await page.getByLabel('Model name').inputValue()).toBe('demo-scripted');
    await approval.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.locator('[data-event="done"]').nth(2).waitFor({ timeout: 20_000 });
    expect(await approval.getAttribute('data-outcome')).toBe('approved');
    expect(await page.locator('.bubble.user').count()).toBe(3);
  });

  it('shows a model error, and an approval edited by hand reaches the node tool', async () => {
    // A base URL of the allowed demo origin but a path the demo model does not serve.
    const baseUrl = page.getByLabel('Base URL (OpenAI-compatible)');
    if (!(await baseUrl.isVisible())) await page.getByText('Model', { exact: true }).click();
    const demoBaseUrl = await baseUrl.inputValue();
    await baseUrl.fill(demoBaseUrl.replace(/\/v1$/, '/missing/v1'));
    await baseUrl.press('Tab');
    let before = await runsDone();
    await send('Hello?');
    const error = page.locator('[data-event="error"]');
    await error.waitFor({ timeout: 20_000 });
    expect(await error.getAttribute('role')).toBe('alert');
    expect(await error.textContent()).toMatch(/^Error \(\w+\): /);
    expect(await axeViolations()).toEqual([]);
    await page.getByRole('button', { name: 'Use the scripted demo model' }).click();
    expect(await baseUrl.inputValue()).toBe(demoBaseUrl);
    await page.getByText('Model', { exact: true }).click();

    before = await runsDone();
    const approval = approvalAfter(await approvalsShown());
    await send('echo written by the model');
    await approval.waitFor();
    expect(await approval.locator('h3').textContent()).toBe('Approve echo?');
    const args = approval.getByLabel('Arguments');
    expect(JSON.parse(await args.inputValue())).toEqual({ text: 'written by the model' });
    await args.fill('{"text": "edited by the person"}');
    await approval.getByRole('button', { name: 'Approve with these arguments' }).click();
    await nextDone(before);
    expect(await approval.getAttribute('data-outcome')).toBe('edited');
    const result = page.locator('[data-event="tool_result"]').last();
    expect(await result.locator('h3').textContent()).toBe('Tool result: echo');
    expect(await result.locator('pre').textContent()).toBe('edited by the person');
    expect(await page.locator('.bubble.assistant').last().textContent()).toContain(
      'echo answered: "edited by the person"',
    );
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

  it('runs plan mode with a skill: the skills event and the proposed plan', async () => {
    await tab('Memories & skills');
    await page.locator('#memory-list li').first().waitFor();
    expect(await page.locator('#memory-list').textContent()).toContain('Nothing remembered yet');
    await page
      .getByLabel('Upload a skill (SKILL.md)')
      .fill('---\nname: haiku\ndescription: Answers in a haiku.\n---\nWrite a haiku.\n');
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.locator('#skill-list', { hasText: 'haiku (user)' }).waitFor();

    await tab('Chat');
    await page.getByLabel('Mode', { exact: true }).selectOption('plan');
    await page.getByLabel('Skills to use').fill('haiku');
    const before = await runsDone();
    await send('A haiku about tea');
    await nextDone(before);
    const skills = page.locator('[data-event="skills"]').last();
    expect(await skills.locator('p').first().textContent()).toBe('Active: haiku (explicit)');
    const plan = page.locator('[data-event="plan"]').last();
    expect(await plan.locator('h3').textContent()).toBe('Plan (proposed)');
    expect(await plan.locator('p').first().textContent()).toContain('A haiku about tea');
    expect(await plan.locator('ol li').allTextContents()).toEqual([
      'Look at the desktop node',
      'Describe what it returned',
      'Answer the question',
    ]);
    expect(await axeViolations()).toEqual([]);
    await shot('plan');
    await page.getByLabel('Mode', { exact: true }).selectOption('agent');
    await page.getByLabel('Skills to use').fill('');
  });

  it('saves memories from a run with Memory on, lists them, forgets one, then all', async () => {
    await page.getByLabel('Memory').check();
    for (const fact of ['I drink green tea', 'My desk faces north']) {
      const before = await runsDone();
      const approval = approvalAfter(await approvalsShown());
      await send(`remember ${fact}`);
      await approval.waitFor();
      expect(await approval.locator('h3').textContent()).toBe('Approve memory_save?');
      await approval.getByRole('button', { name: 'Approve', exact: true }).click();
      await nextDone(before);
      expect(await page.locator('.bubble.assistant').last().textContent()).toMatch(
        /memory_save answered: "Saved as memory /,
      );
    }
    await page.getByLabel('Memory').uncheck();

    await tab('Memories & skills');
    const memories = page.locator('#memory-list li.card');
    await expect
      .poll(() => memories.locator('p:first-child').allTextContents())
      .toEqual(expect.arrayContaining(['I drink green tea', 'My desk faces north']));
    expect(await memories.count()).toBe(2);
    expect(await axeViolations()).toEqual([]);
    await shot('memories-skills');

    await memories
      .filter({ hasText: 'I drink green tea' })
      .getByRole('button', { name: 'Forget' })
      .click();
    await expect
      .poll(() => memories.locator('p:first-child').allTextContents())
      .toEqual(['My desk faces north']);
    // Forgetting everything takes two clicks.
    await page.getByRole('button', { name: 'Forget everything' }).click();
    await page.getByRole('button', { name: 'Click again to forget every memory' }).click();
    await expect
      .poll(() => page.locator('#memory-list').textContent())
      .toContain('Nothing remembered yet');
    const left = (await (
      await fetch(`${demo.url}/api/memories`, {
        headers: { authorization: `Bearer ${await accessToken(demo.url)}` },
      })
    ).json()) as { memories: unknown[] };
    expect(left.memories).toEqual([]);
  }, 90_000);

  it('lists scheduled tasks, and runs a due one confirmed from the notification', async () => {
    const sync = (task: Record<string, unknown>) =>
      fetch(`${demo.url}/scheduled-task/sync`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-internal-secret': SECRET },
        body: JSON.stringify({
          action: 'add',
          task_id: task.id,
          task: { user_id: 'demo', ...task },
        }),
      });
    const daily = await sync({
      id: 'morning-news',
      title: 'Morning news',
      prompt: 'Summarize the news',
      repeat_type: 'daily',
      scheduled_time: '07:30',
    });
    expect(daily.status).toBe(200);
    // A one-off task whose time passed a few seconds ago: due at once, and it asks first.
    const due = new Date(Date.now() - 5_000).toISOString();
    const once = await sync({
      id: 'tea-break',
      title: 'Tea break',
      prompt: 'Remind me of my tea break',
      repeat_type: 'no-repeat',
      run_mode: 'require-confirmation',
      scheduled_date: due.slice(0, 10),
      scheduled_time: due.slice(11, 19),
      timezone: 'UTC',
    });
    expect(once.status).toBe(200);

    await tab('Nodes');
    const confirmation = page.locator('#notifications li', { hasText: 'Tea break is due.' });
    await confirmation.waitFor({ timeout: 30_000 });
    await confirmation.getByRole('button', { name: 'Run it' }).click();

    await tab('Scheduled tasks');
    const task = page.locator('#task-list li.card', { hasText: 'Tea break' });
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click();
          return (await task.locator('ul li').allTextContents()).join('\n');
        },
        { timeout: 60_000 },
      )
      .toMatch(/: succeeded/);
    expect(await task.locator('ul li pre').first().textContent()).toContain(
      'This is the scripted demo model',
    );
    expect(
      await page
        .locator('#task-list li.card', { hasText: 'Morning news' })
        .locator('h3')
        .textContent(),
    ).toBe('Morning news (pending)');
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

  it('requested nothing outside the service (no CDN), and wrote every screenshot the docs show', () => {
    const service = new URL(demo.url);
    expect(requested.length).toBeGreaterThan(10);
    const elsewhere = requested.filter((url) => {
      const { protocol, host } = new URL(url);
      return protocol === 'data:' ? false : host !== service.host;
    });
    expect(elsewhere).toEqual([]);
    for (const doc of ['README.md', 'docs/playground.md']) {
      const linked = [
        ...readFileSync(join(REPO_ROOT, doc), 'utf8').matchAll(/images\/(playground-[\w-]+\.png)/g),
      ].map((match) => match[1]!);
      expect(linked.length, doc).toBeGreaterThan(0);
      for (const image of linked) expect([...written], `${doc} links ${image}`).toContain(image);
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
