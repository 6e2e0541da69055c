/**
 * The nodes panel: the user's nodes (`GET /node/devices`, read again whenever `/ws/web` says a
 * node came or went, and every {@link REFRESH_MS} as a fallback while the panel is shown), a
 * form to call one of their tools by hand (`POST /node/tools/call`), and the notifications the
 * gateway sends to web clients over `/ws/web`.
 */
import type { BrowserWebClient, NodeInfo } from '@agent-backend/client';
import type { Panel, SignedIn } from './panel.js';
import { button, byId, el, guarded, images, showStatus } from './dom.js';

/**
 * How often the list is asked again while the panel is shown, besides each `node_status`: a node
 * of a gateway that died without a word leaves presence only when its entry expires.
 */
const REFRESH_MS = 30_000;
/** Notifications kept on screen. */
const MAX_NOTIFICATIONS = 50;

export function createNodesPanel(): Panel {
  let session: SignedIn | undefined;
  let nodes: NodeInfo[] = [];
  let timer: ReturnType<typeof setInterval> | undefined;
  let socket: BrowserWebClient | undefined;
  const nodeSelect = byId<HTMLSelectElement>('node-select');
  const toolSelect = byId<HTMLSelectElement>('node-tool');

  async function refresh() {
    if (!session) return;
    nodes = (await session.client.nodes.list()).nodes;
    byId('node-list').replaceChildren(
      ...(nodes.length === 0
        ? [el('li', { class: 'hint' }, 'No node has registered yet.')]
        : nodes.map((node) =>
            el(
              'li',
              { class: 'card', 'data-node-id': node.node_id },
              el('h3', {}, `${node.node_name} (${node.node_type})`),
              el(
                'p',
                {},
                el('span', { class: node.is_connected ? 'online' : 'offline' }, node.status),
                ` · ${node.node_id} · ${node.current_tasks}/${node.max_concurrent_tasks} tasks`,
              ),
              el('p', { class: 'hint' }, `Tools: ${node.available_tools.join(', ') || 'none'}`),
            ),
          )),
    );
    const selected = nodeSelect.value;
    nodeSelect.replaceChildren(
      ...nodes
        .filter((node) => node.is_connected)
        .map((node) =>
          el('option', { value: node.node_id }, `${node.node_name} (${node.node_type})`),
        ),
    );
    if (nodes.some((node) => node.node_id === selected)) nodeSelect.value = selected;
    fillTools();
  }

  function fillTools() {
    const node = nodes.find((n) => n.node_id === nodeSelect.value);
    const selected = toolSelect.value;
    toolSelect.replaceChildren(
      ...(node?.available_tools ?? []).map((tool) => el('option', { value: tool }, tool)),
    );
    if (node?.available_tools.includes(selected)) toolSelect.value = selected;
  }
  nodeSelect.addEventListener('change', fillTools);

  byId<HTMLFormElement>('node-call-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      const node = nodes.find((n) => n.node_id === nodeSelect.value);
      if (!session || !node) throw new Error('Choose a connected node first.');
      const args = JSON.parse(byId<HTMLTextAreaElement>('node-args').value || '{}') as Record<
        string,
        unknown
      >;
      showStatus(`Calling ${toolSelect.value} on ${node.node_name}…`);
      const result = await session.client.nodes.callTool({
        node_type: node.node_type,
        node_id: node.node_id,
        tool_name: toolSelect.value,
        arguments: args,
      });
      showStatus('');
      byId('node-result').replaceChildren(
        el(
          'div',
          { class: `card tool${result.success ? '' : ' error'}`, 'data-event': 'node_result' },
          el('h3', {}, result.success ? 'Result' : `Failed (${result.error?.code ?? ''})`),
          el('pre', {}, result.success ? result.text : (result.error?.message ?? result.text)),
          ...images(result.images),
        ),
      );
    });
  });

  /** `/ws/web`: the gateway's notifications to this user's web clients (the SDK reconnects). */
  function connect() {
    if (!session) return;
    const current = session;
    const ws = current.client.webSocket({ userId: current.userId });
    socket = ws;
    ws.on((event) => {
      // On every (re)connection: be told when a node of this user comes or goes.
      if (event.type === 'open') ws.send({ type: 'watch_nodes' });
      if (event.type === 'close' && event.error)
        showStatus(`Notifications stopped: ${event.error}`);
      if (event.type !== 'message' || event.message.type === 'pong') return;
      if (event.message.type !== 'node_status')
        notify(event.message as { type: string } & Record<string, unknown>);
      void guarded(refresh);
    });
  }

  function notify(message: { type: string } & Record<string, unknown>) {
    const list = byId('notifications');
    const item = el('li', {}, `${new Date().toLocaleTimeString()} ${message.type}: `);
    if (message.type === 'scheduled_task_confirmation' && session) {
      const client = session.client;
      const taskId = String(message.task_id);
      const scheduledAt = String(message.scheduled_at);
      item.append(
        `${String(message.title ?? taskId)} is due. `,
        button('Run it', () => client.scheduledTasks.confirm(taskId, scheduledAt, true)),
        button('Skip', () => client.scheduledTasks.confirm(taskId, scheduledAt, false)),
      );
    } else {
      const { type: _type, ...rest } = message;
      item.append(JSON.stringify(rest).slice(0, 300));
    }
    list.prepend(item);
    while (list.children.length > MAX_NOTIFICATIONS) list.lastElementChild?.remove();
  }

  return {
    start(signedIn) {
      session = signedIn;
      connect();
    },
    stop() {
      session = undefined;
      if (timer) clearInterval(timer);
      timer = undefined;
      socket?.close();
      socket = undefined;
      byId('node-list').replaceChildren();
      byId('notifications').replaceChildren();
    },
    shown(visible) {
      if (timer) clearInterval(timer);
      timer = undefined;
      if (!visible) return;
      void guarded(refresh);
      timer = setInterval(() => void guarded(refresh), REFRESH_MS);
    },
  };
}
