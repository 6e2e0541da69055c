/**
 * The chat panel: streams a run's events into the transcript (text, tool calls and results with
 * their images, todos, plans, skills, notices, errors), holds approval cards with their
 * countdown, resumes a run that was streaming when the page was reloaded (Last-Event-ID), stops
 * a run with the service's cancel, and opens the conversations of the list beside it.
 */
import type { AgentRun, InvokeRequestInput } from '@agent-backend/client';
import type { Panel, SignedIn } from './panel.js';
import { ApprovalCard } from './approval-card.js';
import { createConversationList, historyEntries, type Entry } from './conversations.js';
import { byId, describeError, el, guarded, images, json, showStatus, stored } from './dom.js';

interface Conversation {
  sessionId?: string;
  /** Set while a run streams: where to resume it after a reload, and the run to cancel. */
  streaming?: { lastEventId?: string; runId?: string };
  entries: Entry[];
}

/** Entries kept across reloads (older ones are dropped from the saved copy only). */
const SAVED_ENTRIES = 400;
/** Planning tools run without asking even when "Ask before tools run" is on. */
const NEVER_ASK = ['write_todos', 'propose_plan'];

interface ModelFields {
  baseUrl: string;
  apiKey: string;
  modelName: string;
}

export function createChatPanel(): Panel {
  let session: SignedIn | undefined;
  let conversation: Conversation = { entries: [] };
  let abort: AbortController | undefined;
  let bubble: HTMLElement | undefined;
  const approvals = new Map<string, ApprovalCard>();
  const transcript = byId('transcript');
  const modelInputs = {
    baseUrl: byId<HTMLInputElement>('llm-base-url'),
    apiKey: byId<HTMLInputElement>('llm-api-key'),
    modelName: byId<HTMLInputElement>('llm-model'),
  };

  const model = stored.get<ModelFields>('model');
  if (model) {
    for (const key of Object.keys(modelInputs) as (keyof ModelFields)[])
      modelInputs[key].value = model[key];
  }
  for (const input of Object.values(modelInputs)) {
    input.addEventListener('change', () => {
      stored.set('model', readModel());
      updateDemoLabel();
    });
  }
  const readModel = (): ModelFields => ({
    baseUrl: modelInputs.baseUrl.value.trim(),
    apiKey: modelInputs.apiKey.value,
    modelName: modelInputs.modelName.value.trim(),
  });
  const updateDemoLabel = () => {
    const demo = session?.config.demo_model;
    byId('demo-label').hidden = !demo || readModel().baseUrl !== demo.base_url;
  };

  byId('use-demo-model').addEventListener('click', () => {
    const demo = session?.config.demo_model;
    if (!demo) return;
    modelInputs.baseUrl.value = demo.base_url;
    modelInputs.apiKey.value = 'demo';
    modelInputs.modelName.value = demo.model_name;
    stored.set('model', readModel());
    updateDemoLabel();
  });

  const conversations = createConversationList({
    open: (sessionId) => openSession(sessionId),
    deleted: (sessionId) => {
      if (conversation.sessionId === sessionId) newConversation();
    },
    current: () => conversation.sessionId,
  });
  const newConversation = () => {
    abort?.abort();
    conversation = { entries: [] };
    save();
    renderAll();
  };
  byId('new-session').addEventListener('click', () => {
    newConversation();
    void guarded(conversations.refresh);
  });
  byId('stop').addEventListener('click', () => void guarded(stopRun));

  /** Cancels the run on the service (any replica); its stream then ends with `run_aborted`. */
  async function stopRun(): Promise<void> {
    const runId = conversation.streaming?.runId;
    if (!session || !runId) return abort?.abort();
    byId<HTMLButtonElement>('stop').disabled = true;
    try {
      await session.client.runs.cancel(runId);
    } catch (error) {
      // The service could not be asked: at least stop reading the stream.
      abort?.abort();
      throw error;
    }
  }

  /** Shows a stored conversation of the list: its messages and todos, as the service has them. */
  async function openSession(sessionId: string): Promise<void> {
    if (!session) return;
    const { client } = session;
    const [detail, messages] = await Promise.all([
      client.sessions.get(sessionId),
      (async () => {
        const all = [];
        for await (const message of client.sessions.messages(sessionId, { limit: 200 })) {
          all.push(message);
        }
        return all;
      })(),
    ]);
    // Stop following the run shown before (it goes on on the service).
    abort?.abort();
    conversation = {
      sessionId,
      entries: [...historyEntries(messages), { type: 'todos', todos: detail.todos }],
    };
    save();
    renderAll();
    await conversations.refresh();
  }
  byId<HTMLFormElement>('chat-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(send);
  });
  byId('message').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      void guarded(send);
    }
  });

  async function send(): Promise<void> {
    if (!session || abort) return;
    const input = byId<HTMLTextAreaElement>('message');
    const message = input.value.trim();
    if (!message) return;
    const llm = readModel();
    if (!llm.baseUrl || !llm.apiKey || !llm.modelName) {
      (byId('model-details') as HTMLDetailsElement).open = true;
      throw new Error('Fill in the model first (base URL, API key and model name).');
    }
    const request: InvokeRequestInput = {
      message,
      llm_config: llm,
      mode: byId<HTMLSelectElement>('mode').value as InvokeRequestInput['mode'],
      enable_memory: byId<HTMLInputElement>('memory').checked,
      sandbox_mode: 'none',
      ...(conversation.sessionId ? { session_id: conversation.sessionId } : {}),
      ...(byId<HTMLInputElement>('hitl').checked
        ? { hitl_config: { default_requires_interrupt: true, allowlist: NEVER_ASK } }
        : {}),
    };
    const skillNames = byId<HTMLInputElement>('skill-names')
      .value.split(',')
      .map((name) => name.trim())
      .filter(Boolean);
    const autoMatch = byId<HTMLInputElement>('skills-auto').checked;
    if (skillNames.length || autoMatch)
      request.skills = { skill_names: skillNames, auto_match: autoMatch };
    input.value = '';
    add({ type: 'user', content: message });
    await stream((signal) => session!.client.invoke(request, { signal }));
  }

  /** Streams a run into the transcript until it ends, is stopped, or cannot be resumed. */
  async function stream(open: (signal: AbortSignal) => AgentRun): Promise<void> {
    abort = new AbortController();
    setBusy(true);
    conversation.streaming = {};
    save();
    const run = open(abort.signal);
    try {
      for await (const event of run) {
        if (event.type === 'session') conversation.sessionId = event.session_id;
        const runId: string | undefined = run.runId ?? conversation.streaming?.runId;
        conversation.streaming = { lastEventId: run.lastEventId, ...(runId ? { runId } : {}) };
        if (event.type === 'session') void guarded(conversations.refresh);
        add(event);
      }
      conversation.streaming = undefined;
    } catch (error) {
      if (abort.signal.aborted) {
        showStatus('Stopped. The run ends on the server shortly.');
        conversation.streaming = undefined;
      } else {
        showStatus(describeError(error), 'error');
        // Not resumable any more (expired, or a 4xx): do not try again at the next load.
        if ((error as { status?: number }).status) conversation.streaming = undefined;
      }
    } finally {
      abort = undefined;
      setBusy(false);
      save();
      void guarded(conversations.refresh);
    }
  }

  function setBusy(busy: boolean) {
    byId<HTMLButtonElement>('send').disabled = busy;
    byId<HTMLButtonElement>('stop').disabled = !busy;
  }

  function add(entry: Entry) {
    conversation.entries.push(entry);
    render(entry);
    save();
  }

  function save() {
    if (!session) return;
    stored.set(`conversation.${session.userId}`, {
      ...conversation,
      entries: conversation.entries.slice(-SAVED_ENTRIES),
    } satisfies Conversation);
  }

  function renderAll() {
    transcript.replaceChildren();
    byId('todos').replaceChildren();
    for (const card of approvals.values()) card.stop();
    approvals.clear();
    bubble = undefined;
    for (const entry of conversation.entries) render(entry);
  }

  function append(node: HTMLElement) {
    transcript.append(node);
    transcript.scrollTop = transcript.scrollHeight;
  }

  function render(entry: Entry) {
    if (entry.type !== 'message_chunk') bubble = undefined;
    switch (entry.type) {
      case 'user':
        append(el('div', { class: 'bubble user' }, entry.content));
        break;
      case 'session':
      case 'credentials_refreshed':
        break;
      case 'message_chunk':
        if (!bubble) {
          bubble = el('div', { class: 'bubble assistant' });
          append(bubble);
        }
        bubble.append(entry.content);
        transcript.scrollTop = transcript.scrollHeight;
        break;
      case 'tool_call':
        append(
          el(
            'div',
            { class: 'card tool', 'data-event': 'tool_call' },
            el('h3', {}, `Tool call: ${entry.tool_name}`),
            json(entry.tool_args),
          ),
        );
        break;
      case 'tool_result':
        append(
          el(
            'div',
            { class: `card tool${entry.is_error ? ' error' : ''}`, 'data-event': 'tool_result' },
            el('h3', {}, `${entry.is_error ? 'Tool failed' : 'Tool result'}: ${entry.tool_name}`),
            el(
              'pre',
              {},
              entry.result.length > 4000 ? `${entry.result.slice(0, 4000)}…` : entry.result,
            ),
            ...images(entry.images),
          ),
        );
        break;
      case 'todos':
        byId('todos').replaceChildren(
          ...entry.todos.map((todo) =>
            el(
              'li',
              { class: `todo-${todo.status}` },
              `${todo.content} (${todo.status.replace('_', ' ')})`,
            ),
          ),
        );
        break;
      case 'plan':
        append(
          el(
            'div',
            { class: 'card', 'data-event': 'plan' },
            el('h3', {}, `Plan (${entry.status})`),
            el('p', {}, entry.summary),
            el('ol', {}, ...entry.steps.map((step) => el('li', {}, step))),
            entry.status === 'proposed'
              ? el('p', { class: 'hint' }, 'Reply to accept it or ask for changes.')
              : null,
          ),
        );
        break;
      case 'skills':
        append(
          el(
            'div',
            { class: 'card', 'data-event': 'skills' },
            el('h3', {}, 'Skills'),
            el(
              'p',
              {},
              entry.activated.length
                ? `Active: ${entry.activated.map((s) => `${s.name} (${s.reason})`).join(', ')}`
                : 'No skill activated.',
            ),
            entry.missing.length ? el('p', {}, `Not found: ${entry.missing.join(', ')}`) : null,
          ),
        );
        break;
      case 'notice':
        append(el('div', { class: 'card', 'data-event': 'notice' }, `Notice: ${entry.message}`));
        break;
      case 'approval_request': {
        const card = new ApprovalCard(entry, () => session);
        approvals.set(entry.request_id, card);
        append(card.node);
        break;
      }
      case 'approval_result':
        approvals.get(entry.request_id)?.decided(entry.outcome, entry.message);
        break;
      case 'approval_outcome':
        append(
          el(
            'p',
            { class: 'hint', 'data-event': 'approval_outcome' },
            `Approval of ${entry.tool_name}: ${entry.outcome}${entry.message ? ` (${entry.message})` : ''}`,
          ),
        );
        break;
      case 'error':
        append(
          el(
            'div',
            { class: 'card error', role: 'alert', 'data-event': 'error' },
            `Error (${entry.code}): ${entry.message}`,
          ),
        );
        break;
      case 'done':
        append(el('p', { class: 'hint', 'data-event': 'done' }, 'Run finished.'));
        for (const card of approvals.values()) card.stop();
        break;
    }
  }

  return {
    start(signedIn) {
      session = signedIn;
      byId('use-demo-model').hidden = !signedIn.config.demo_model;
      // A first visit of `pnpm demo`: the demo model is preselected.
      if (signedIn.config.demo_model && !stored.get('model')) byId('use-demo-model').click();
      updateDemoLabel();
      conversation = stored.get<Conversation>(`conversation.${signedIn.userId}`) ?? { entries: [] };
      renderAll();
      conversations.start(signedIn);
      const resume = conversation.streaming;
      if (resume && conversation.sessionId) {
        const sessionId = conversation.sessionId;
        showStatus('Resuming the run that was streaming…');
        void stream((signal) =>
          signedIn.client.resume(sessionId, resume.lastEventId, { signal }),
        ).then(() => showStatus(''));
      }
    },
    stop() {
      abort?.abort();
      conversations.stop();
      session = undefined;
      conversation = { entries: [] };
      renderAll();
    },
  };
}
