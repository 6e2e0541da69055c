/**
 * The conversation list beside the chat: the user's sessions from the service
 * (`GET /api/agent/sessions`, latest activity first), each opened (its stored messages read
 * back into the transcript), renamed or deleted. It lives on the service, so a reload, another
 * browser or another replica shows the same list.
 */
import type { AgentEvent, SessionSummary, StoredMessage } from '@agent-backend/client';
import type { SignedIn } from './panel.js';
import { button, byId, el, guarded } from './dom.js';

/** How the transcript shows a stored approval outcome (the live card is gone with its run). */
export interface ApprovalOutcomeEntry {
  type: 'approval_outcome';
  tool_name: string;
  outcome: string;
  message?: string;
}

/** What the transcript shows: a run's events, the user's own messages, stored outcomes. */
export type Entry = AgentEvent | { type: 'user'; content: string } | ApprovalOutcomeEntry;

/** Sessions listed (the latest ones; older ones are left out of the playground). */
const LISTED = 50;

/**
 * A stored conversation as the transcript's entries: the stored messages carry the SSE events'
 * field names, so they become the same events a live run sends.
 */
export function historyEntries(messages: readonly StoredMessage[]): Entry[] {
  return messages.flatMap((message): Entry[] => {
    switch (message.role) {
      case 'user':
        return [{ type: 'user', content: message.content }];
      case 'assistant':
        return [
          ...(message.content
            ? [{ type: 'message_chunk' as const, content: message.content }]
            : []),
          ...message.tool_calls.map((call) => ({ type: 'tool_call' as const, ...call })),
        ];
      case 'tool': {
        const toolName = message.tool_name ?? 'tool';
        return [
          ...(message.approval
            ? [
                {
                  type: 'approval_outcome' as const,
                  tool_name: toolName,
                  outcome: message.approval.outcome,
                  ...(message.approval.message ? { message: message.approval.message } : {}),
                },
              ]
            : []),
          {
            type: 'tool_result' as const,
            tool_name: toolName,
            tool_call_id: message.tool_call_id,
            result: message.result,
          },
        ];
      }
    }
  });
}

export interface ConversationList {
  start(session: SignedIn): void;
  stop(): void;
  /** Reads the list again (after a run, a rename, a delete). */
  refresh(): Promise<void>;
}

/**
 * The list in `#conversation-list`. `open` shows a session in the chat, `deleted` tells the chat
 * a session is gone, `current` names the session the chat shows (marked in the list).
 */
export function createConversationList(hooks: {
  open(sessionId: string): Promise<void>;
  deleted(sessionId: string): void;
  current(): string | undefined;
}): ConversationList {
  const list = byId('conversation-list');
  let session: SignedIn | undefined;
  let renaming: string | undefined;

  const refresh = async () => {
    const client = session?.client;
    if (!client) return;
    const sessions: SessionSummary[] = [];
    for await (const item of client.sessions.list({ limit: LISTED })) {
      sessions.push(item);
      if (sessions.length >= LISTED) break;
    }
    if (session?.client !== client) return;
    list.replaceChildren(
      ...sessions.map((item) => row(item)),
      ...(sessions.length ? [] : [el('li', { class: 'hint' }, 'No conversation yet.')]),
    );
  };

  function row(item: SessionSummary): HTMLElement {
    const title = item.title ?? item.session_id;
    const current = item.session_id === hooks.current();
    if (renaming === item.session_id) return renameForm(item, title);
    return el(
      'li',
      { 'data-session-id': item.session_id, ...(current ? { class: 'current' } : {}) },
      button(title, () => hooks.open(item.session_id), {
        class: 'link',
        ...(current ? { 'aria-current': 'true' } : {}),
        title: item.last_message_preview ?? '',
      }),
      el(
        'span',
        { class: 'row' },
        button(
          'Rename',
          () => {
            renaming = item.session_id;
            return refresh();
          },
          { 'aria-label': `Rename ${title}` },
        ),
        button(
          'Delete',
          async () => {
            await session?.client.sessions.delete(item.session_id);
            hooks.deleted(item.session_id);
            await refresh();
          },
          { 'aria-label': `Delete ${title}` },
        ),
      ),
    );
  }

  function renameForm(item: SessionSummary, title: string): HTMLElement {
    const inputId = `rename-${item.session_id}`;
    const input = el('input', { id: inputId, value: title, autocomplete: 'off' });
    const form = el(
      'form',
      { class: 'row' },
      el('label', { for: inputId }, 'New title'),
      input,
      el('button', { type: 'submit' }, 'Save'),
      button('Cancel', () => {
        renaming = undefined;
        return refresh();
      }),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void guarded(async () => {
        await session?.client.sessions.rename(item.session_id, input.value);
        renaming = undefined;
        await refresh();
      });
    });
    queueMicrotask(() => input.focus());
    return el('li', { 'data-session-id': item.session_id }, form);
  }

  return {
    start(signedIn) {
      session = signedIn;
      renaming = undefined;
      void guarded(refresh);
    },
    stop() {
      session = undefined;
      list.replaceChildren();
    },
    refresh,
  };
}
