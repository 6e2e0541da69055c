/** What the panels of the playground share with its entry (app.ts). */
import type * as ClientModule from '@agent-backend/client';
import type { AgentBackendClient, PlaygroundConfig } from '@agent-backend/client';

export type Sdk = typeof ClientModule;

/** What a panel gets once the user is signed in. */
export interface SignedIn {
  readonly sdk: Sdk;
  readonly client: AgentBackendClient;
  readonly userId: string;
  /** The current access token (renewed from the refresh token when there is one). */
  token(): Promise<string>;
  readonly config: PlaygroundConfig;
}

/** A panel: shown and hidden with its tab; `start` once signed in, `stop` at sign-out. */
export interface Panel {
  start(session: SignedIn): void;
  stop(): void;
  shown?(visible: boolean): void;
}
