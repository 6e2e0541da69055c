import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RATE_LIMITED_NOTICE } from '@agent-backend/chat-platform';
import {
  startFakeLark,
  startScriptedModel,
  textReply,
  type FakeLark,
  type ScriptedModel,
} from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { larkMessageEvent, larkWebhookRequest } from './lark-delivery.js';
import { eventually } from './ws-client.js';

const APP = { appId: 'cli_test', encryptKey: 'enc-key-for-limits', token: 'verification-token' };
const MODEL = 'chat-limits-model';

/**
 * A chat over its message rate (docs/limits.md): its events are still acknowledged (the
 * platform must not redeliver), and answered with a short notice instead of a run; another chat
 * is untouched.
 */
describe('chat platform message rate', () => {
  let cluster: Cluster;
  let lark: FakeLark;
  let model: ScriptedModel;
  let seq = 0;

  /** Delivers one message of `chatId` and waits for the chat's reply to it. */
  const converse = async (chatId: string, text: string) => {
    const event = larkMessageEvent(APP, { eventId: `ev-lim-${++seq}-${Date.now()}`, chatId, text });
    const res = await fetch(`${cluster.apis[0]!.url}/channels/feishu/webhook`, {
      method: 'POST',
      ...larkWebhookRequest(APP, event),
    });
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 200,
      body: { code: 0, msg: 'success' },
    });
    const messageId = event.event.message.message_id;
    const replies = () => lark.messages.filter((m) => m.kind === 'reply' && m.target === messageId);
    await eventually(async () => replies().length > 0, 20_000);
    return replies().map((m) => m.content);
  };

  beforeAll(async () => {
    lark = await startFakeLark({ appId: APP.appId, appSecret: 'lark-secret' });
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 0,
      apis: 1,
      workers: 1,
      env: {
        LARK_APP_ID: APP.appId,
        LARK_APP_SECRET: 'lark-secret',
        LARK_API_BASE_URL: lark.url,
        LARK_ENCRYPT_KEY: APP.encryptKey,
        LARK_VERIFICATION_TOKEN: APP.token,
        DEFAULT_LLM_BASE_URL: model.baseUrl,
        DEFAULT_LLM_MODEL: MODEL,
        DEFAULT_LLM_API_KEY: 'sk-chat-limits',
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        CHAT_MESSAGES_PER_CHAT_PER_MINUTE: '2',
      },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
    await lark?.close();
    await model?.close();
  });

  it('acknowledges messages over the rate and answers them with a notice, not a run', async () => {
    model.script(MODEL, [textReply('One'), textReply('Two'), textReply('Other chat')]);
    expect(await converse('oc_busy', 'first')).toEqual([{ text: 'One' }]);
    expect(await converse('oc_busy', 'second')).toEqual([{ text: 'Two' }]);
    expect(await converse('oc_busy', 'third')).toEqual([{ text: RATE_LIMITED_NOTICE }]);
    expect(await converse('oc_busy', 'fourth')).toEqual([{ text: RATE_LIMITED_NOTICE }]);
    expect(model.requests(MODEL)).toHaveLength(2);

    expect(await converse('oc_quiet', 'hello')).toEqual([{ text: 'Other chat' }]);
    expect(model.requests(MODEL)).toHaveLength(3);
  });
});
