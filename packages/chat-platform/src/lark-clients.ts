import { LARK_ORIGINS, LarkClient, RECEIVE_ID_TYPES, type LarkPlatform } from '@agent-backend/lark';

export interface LarkAppConfig {
  LARK_APP_ID?: string;
  LARK_APP_SECRET?: string;
  LARK_API_BASE_URL?: string;
}

/**
 * One client per platform when app credentials are configured (`LARK_API_BASE_URL` overrides
 * both origins); none otherwise, and then nothing is ever sent to the platform.
 */
export function larkClients(config: LarkAppConfig): Partial<Record<LarkPlatform, LarkClient>> {
  const clients: Partial<Record<LarkPlatform, LarkClient>> = {};
  if (!config.LARK_APP_ID || !config.LARK_APP_SECRET) return clients;
  for (const platform of Object.keys(LARK_ORIGINS) as LarkPlatform[]) {
    clients[platform] = new LarkClient({
      baseUrl: config.LARK_API_BASE_URL ?? LARK_ORIGINS[platform],
      appId: config.LARK_APP_ID,
      appSecret: config.LARK_APP_SECRET,
    });
  }
  return clients;
}

/**
 * Sends scheduled-task notifications to a chat or a user on the platform named by the target
 * (`notification_config.lark` / `.feishu`: `{ chat_id | open_id | user_id | union_id | email }`).
 */
export function larkNotifier(clients: Partial<Record<LarkPlatform, LarkClient>>) {
  return {
    async send(input: { userId: string; text: string; target: unknown }): Promise<void> {
      const target = (input.target ?? {}) as Record<string, unknown>;
      const client = clients[target.platform as LarkPlatform];
      if (!client) throw new Error('chat platform not configured (LARK_APP_ID / LARK_APP_SECRET)');
      const type = RECEIVE_ID_TYPES.find((t) => typeof target[t] === 'string' && target[t] !== '');
      if (!type) throw new Error('no receiver in the chat-platform target');
      await client.sendText(type, target[type] as string, input.text);
    },
  };
}
