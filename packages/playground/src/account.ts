/**
 * What the service keeps for the user: memories (filter, forget one, forget all), skills
 * (upload a SKILL.md, delete their own) and scheduled tasks with their latest occurrences.
 */
import type { Panel, SignedIn } from './panel.js';
import { button, byId, el, guarded, showStatus } from './dom.js';

export function createMemoryPanel(): Panel {
  let session: SignedIn | undefined;
  let armed = false;
  const clear = byId<HTMLButtonElement>('memory-clear');

  async function loadMemories() {
    if (!session) return;
    const q = byId<HTMLInputElement>('memory-query').value.trim();
    const { memories } = await session.client.memories.list({ ...(q ? { q } : {}), limit: 50 });
    byId('memory-list').replaceChildren(
      ...(memories.length === 0
        ? [el('li', { class: 'hint' }, 'Nothing remembered yet (turn Memory on in the chat).')]
        : memories.map((memory) =>
            el(
              'li',
              { class: 'card' },
              el('p', {}, memory.text),
              el(
                'p',
                { class: 'hint' },
                `${memory.tags.length ? `${memory.tags.join(', ')} · ` : ''}${new Date(memory.updated_at).toLocaleString()} `,
                button('Forget', async () => {
                  await session?.client.memories.delete(memory.id);
                  await loadMemories();
                }),
              ),
            ),
          )),
    );
  }

  async function loadSkills() {
    if (!session) return;
    const skills = await session.client.skills.list();
    byId('skill-list').replaceChildren(
      ...skills.map((skill) =>
        el(
          'li',
          { class: 'card' },
          el('h3', {}, `${skill.name} (${skill.source})`),
          el('p', {}, skill.description),
          skill.source === 'user'
            ? button('Delete', async () => {
                await session?.client.skills.delete(skill.name);
                await loadSkills();
              })
            : null,
        ),
      ),
    );
  }

  byId<HTMLFormElement>('memory-search-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(loadMemories);
  });
  // Two clicks: forgetting everything cannot be undone.
  clear.addEventListener('click', () => {
    if (!armed) {
      armed = true;
      clear.textContent = 'Click again to forget every memory';
      return;
    }
    armed = false;
    clear.textContent = 'Forget everything';
    void guarded(async () => {
      const { deleted } = (await session?.client.memories.clear()) ?? { deleted: 0 };
      showStatus(`${deleted} memories forgotten.`);
      await loadMemories();
    });
  });
  byId<HTMLFormElement>('skill-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      const skill_md = byId<HTMLTextAreaElement>('skill-md').value;
      if (!session || !skill_md.trim()) return;
      const uploaded = await session.client.skills.upload({ skill_md });
      showStatus(`Skill ${uploaded.name} ${uploaded.created ? 'added' : 'updated'}.`);
      byId<HTMLTextAreaElement>('skill-md').value = '';
      await loadSkills();
    });
  });

  return {
    start(signedIn) {
      session = signedIn;
    },
    stop() {
      session = undefined;
      byId('memory-list').replaceChildren();
      byId('skill-list').replaceChildren();
    },
    shown(visible) {
      if (!visible) return;
      void guarded(loadMemories);
      void guarded(loadSkills);
    },
  };
}

export function createTasksPanel(): Panel {
  let session: SignedIn | undefined;

  async function load() {
    if (!session) return;
    const tasks = await session.client.scheduledTasks.list();
    byId('task-list').replaceChildren(
      ...(tasks.length === 0
        ? [
            el(
              'li',
              { class: 'hint' },
              'No scheduled task. Your web app syncs them to the service.',
            ),
          ]
        : tasks.map((task) =>
            el(
              'li',
              { class: 'card' },
              el('h3', {}, `${task.task.title} (${task.status})`),
              el(
                'p',
                { class: 'hint' },
                `${task.task.repeat_type}, ${task.task.run_mode}; next: ${task.next_run_at ? new Date(task.next_run_at).toLocaleString() : 'none'}`,
              ),
              el('p', {}, task.task.prompt),
              task.runs.length
                ? el(
                    'ul',
                    {},
                    ...task.runs.map((run) =>
                      el(
                        'li',
                        {},
                        `${new Date(run.scheduled_at).toLocaleString()}: ${run.status}`,
                        run.output ? el('pre', {}, run.output) : null,
                        run.error ? el('pre', { class: 'error' }, run.error) : null,
                      ),
                    ),
                  )
                : el('p', { class: 'hint' }, 'No occurrence yet.'),
            ),
          )),
    );
  }
  byId('tasks-refresh').addEventListener('click', () => void guarded(load));

  return {
    start(signedIn) {
      session = signedIn;
    },
    stop() {
      session = undefined;
      byId('task-list').replaceChildren();
    },
    shown(visible) {
      if (visible) void guarded(load);
    },
  };
}
