import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { TaskThread } from './task-thread.js';

/** A task worker that answers with its thread's id, so a test sees when a new thread answers. */
const dir = mkdtempSync(join(tmpdir(), 'task-thread-'));
const workerFile = join(dir, 'echo-worker.js');
writeFileSync(
  workerFile,
  `import { parentPort, threadId } from 'node:worker_threads';
parentPort.on('message', ({ id, text, delayMs = 0 }) =>
  setTimeout(() => parentPort.postMessage({ id, text, threadId }), delayMs),
);
`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Task {
  readonly text: string;
  readonly delayMs?: number;
}

interface Echo {
  readonly id: number;
  readonly text: string;
  readonly threadId: number;
}

describe('TaskThread', () => {
  it('starts at the first task, stops after its idle time, and starts again for the next', async () => {
    const thread = new TaskThread<Task, Echo>(pathToFileURL(workerFile), 'echo', 200);
    try {
      expect(thread.running).toBe(false);
      const [a, b] = await Promise.all([thread.run({ text: 'a' }), thread.run({ text: 'b' })]);
      expect([a.text, b.text]).toEqual(['a', 'b']);
      expect(b.threadId).toBe(a.threadId);
      expect(thread.running).toBe(true);

      // Tasks closer together than the idle time keep the same thread.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await thread.run({ text: 'c' })).threadId).toBe(a.threadId);

      await expect.poll(() => thread.running, { timeout: 5_000, interval: 20 }).toBe(false);
      const again = await thread.run({ text: 'd' });
      expect(again.text).toBe('d');
      expect(again.threadId).not.toBe(a.threadId);
    } finally {
      await thread.close();
    }
  });

  it('does not stop a thread while a task runs longer than its idle time', async () => {
    const thread = new TaskThread<Task, Echo>(pathToFileURL(workerFile), 'echo', 50);
    try {
      const slow = thread.run({ text: 'slow', delayMs: 400 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const quick = await thread.run({ text: 'quick' });
      const answered = await slow;
      expect(answered.text).toBe('slow');
      expect(quick.threadId).toBe(answered.threadId);
    } finally {
      await thread.close();
    }
  });
});
