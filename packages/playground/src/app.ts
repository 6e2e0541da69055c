/**
 * The playground's entry: loads the client SDK the service serves at `sdk/` (the playground is a
 * client of the public API like any other), signs in with a pasted or minted token, and wires
 * the panels. See docs/playground.md.
 */
import type { PlaygroundConfig } from '@agent-backend/client';
import type { Panel, Sdk, SignedIn } from './panel.js';
import { byId, describeError, guarded, showStatus, stored } from './dom.js';
import { createChatPanel } from './chat.js';
import { createKnowledgePanel } from './knowledge.js';
import { createMemoryPanel, createTasksPanel } from './account.js';
import { createNodesPanel } from './nodes.js';

interface StoredToken {
  readonly kind: 'access' | 'refresh';
  readonly value: string;
}

const PANELS = ['sign-in', 'chat', 'nodes', 'knowledge', 'memory', 'tasks'] as const;
type PanelName = (typeof PANELS)[number];

async function main(): Promise<void> {
  const sdk = (await import(new URL('sdk/index.js', document.baseURI).href)) as Sdk;
  const config = (await (await fetch('config.json')).json()) as PlaygroundConfig;
  const panels: Partial<Record<PanelName, Panel>> = {
    chat: createChatPanel(),
    nodes: createNodesPanel(),
    knowledge: createKnowledgePanel(),
    memory: createMemoryPanel(),
    tasks: createTasksPanel(),
  };
  let current: PanelName = 'sign-in';
  let signedIn: SignedIn | undefined;

  const show = (name: PanelName) => {
    current = name;
    for (const panel of PANELS) {
      byId(`panel-${panel}`).hidden = panel !== name;
      panels[panel]?.shown?.(panel === name && signedIn !== undefined);
    }
    for (const tab of document.querySelectorAll<HTMLButtonElement>('.tabs button')) {
      if (tab.dataset.panel === name) tab.setAttribute('aria-current', 'page');
      else tab.removeAttribute('aria-current');
    }
    if (!signedIn && name !== 'sign-in') showStatus('Sign in first.');
    history.replaceState(null, '', `#${name}`);
  };
  for (const tab of document.querySelectorAll<HTMLButtonElement>('.tabs button')) {
    tab.addEventListener('click', () => show(tab.dataset.panel as PanelName));
  }

  const signIn = async (token: StoredToken) => {
    const auth: { token: () => Promise<string>; onUnauthorized?: () => Promise<string> } =
      token.kind === 'refresh'
        ? (() => {
            const refresh = sdk.refreshTokenAuth({
              baseUrl: location.origin,
              refreshToken: token.value,
            });
            return {
              token: async () => (refresh.token as () => Promise<string>)(),
              onUnauthorized: async () => (await refresh.onUnauthorized!())!,
            };
          })()
        : { token: async () => token.value };
    const client = new sdk.AgentBackendClient({ baseUrl: location.origin, ...auth });
    const userId = await client.whoami();
    stored.set('token', token);
    for (const panel of Object.values(panels)) panel.stop();
    signedIn = { sdk, client, userId, token: auth.token, config };
    for (const panel of Object.values(panels)) panel.start(signedIn);
    byId('identity').textContent = `Signed in as ${userId}`;
    byId('sign-out').hidden = false;
    showStatus('');
  };

  byId<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const value = byId<HTMLTextAreaElement>('token-input').value.trim();
    if (!value) return showStatus('Paste a token first.', 'error');
    // An access token is a JWT (three dot-separated parts); a refresh token is opaque.
    const kind = value.split('.').length === 3 ? 'access' : 'refresh';
    void guarded(async () => {
      await signIn({ kind, value });
      show('chat');
    });
  });

  const mintForm = byId<HTMLFormElement>('mint-form');
  mintForm.hidden = !config.dev_tokens;
  mintForm.addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      const user_id = byId<HTMLInputElement>('mint-user').value.trim();
      const response = await fetch('/api/dev/tokens', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id }),
      });
      const body = (await response.json()) as {
        refreshToken?: string;
        error?: { message: string };
      };
      if (!response.ok || !body.refreshToken) {
        throw new Error(body.error?.message ?? `minting answered ${response.status}`);
      }
      await signIn({ kind: 'refresh', value: body.refreshToken });
      show('chat');
    });
  });

  byId('sign-out').addEventListener('click', () => {
    for (const panel of Object.values(panels)) panel.stop();
    signedIn = undefined;
    stored.set('token', undefined);
    byId('identity').textContent = 'Not signed in';
    byId('sign-out').hidden = true;
    show('sign-in');
  });

  const requested = location.hash.slice(1) as PanelName;
  const saved = stored.get<StoredToken>('token');
  if (saved) {
    try {
      await signIn(saved);
    } catch (error) {
      stored.set('token', undefined);
      showStatus(`The saved token no longer works: ${describeError(error)}`, 'error');
    }
  }
  show(PANELS.includes(requested) ? requested : signedIn ? 'chat' : 'sign-in');
  if (current === 'sign-in' && config.dev_tokens) byId('mint-user').focus();
  document.body.dataset.ready = 'true';
}

void main().catch((error: unknown) => showStatus(describeError(error), 'error'));
