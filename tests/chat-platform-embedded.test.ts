/**
 * The chat platform on the embedded default: the all-in-one acknowledges a
 * message event, answers it in-process and replies through the platform's API; and a scheduled
 * task's result goes to the chat named in its `notification_config` (item 4).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startFakeLark,
  startScriptedModel,
  startServiceProcess,
  textReply,
  type FakeLark,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { post, requireBuild, tempDir } from './helpers.js';
import { eventually } from './ws-client.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const MODEL = 'embedded-chat';
const TOKEN = 'embedded-verification';

describe('chat platform on the embedded default', () => {
  let lark: FakeLark;
  let model: ScriptedModel;
  let service: ServiceProcess;

  beforeAll(async () => {
    requireBuild(MAIN);
    lark = await startFakeLark({ appId: 'cli_emb', appSecret: 'emb-secret' });
    model = await startScriptedModel();
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: tempDir('chat-embedded'),
        INTERNAL_API_SECRET: 'sync-secret',
        LARK_APP_ID: 'cli_emb',
        LARK_APP_SECRET: 'emb-secret',
        LARK_API_BASE_URL: lark.url,
        LARK_VERIFICATION_TOKEN: TOKEN,
        DEFAULT_LLM_BASE_URL: model.baseUrl,
        DEFAULT_LLM_API_KEY: 'sk-embedded-chat',
        DEFAULT_LLM_MODEL: MODEL,
      },
    });
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await lark?.close();
    await model?.close();
  });

  it('acknowledges a message, answers it in-process and replies in the chat, once', async () => {
    model.script(MODEL, [textReply('Embedded reply')]);
    const event = {
      schema: '2.0',
      header: { event_id: 'emb-ev-1', event_type: 'im.message.receive_v1', token: TOKEN },
      event: {
        sender: { sender_id: { open_id: 'ou_1' } },
        message: {
          message_id: 'om_emb1',
          chat_id: 'oc_emb',
          message_type: 'text',
          content: '{"text":"hello"}',
        },
      },
    };
    for (let i = 0; i < 2; i++) {
      const res = await post(`${service.url}/channels/lark/webhook`, event);
      expect(await res.json()).toEqual({ code: 0, msg: 'success' });
    }
    await eventually(async () => lark.messages.some((m) => m.target === 'om_emb1'), 20_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(
      lark.messages.filter((m) => m.target === 'om_emb1').map((m) => [m.kind, m.content.text]),
    ).toEqual([['reply', 'Embedded reply']]);
    const wrong = await post(`${service.url}/channels/lark/webhook`, {
      ...event,
      header: { ...event.header, token: 'x' },
    });
    expect(wrong.status).toBe(401);
  });

  it('sends a scheduled task result to the chat of its notification_config', async () => {
    model.script(MODEL, [textReply('Daily digest ready.')]);
    const at = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000).toISOString();
    const res = await post(
      `${service.url}/scheduled-task/sync`,
      {
        action: 'add',
        task_id: 'notify-1',
        task: {
          id: 'notify-1',
          user_id: 'uma',
          title: 'Digest',
          prompt: 'Write the digest',
          run_mode: 'auto',
          connector: 'none',
          scheduled_date: at.slice(0, 10),
          scheduled_time: at.slice(11, 19),
          notification_config: { inApp: false, feishu: { chat_id: 'oc_digest' } },
        },
      },
      { 'x-internal-secret': 'sync-secret' },
    );
    expect(res.status).toBe(200);
    await eventually(
      async () => lark.messages.some((m) => m.kind === 'send' && m.target === 'oc_digest'),
      30_000,
    );
    const sent = lark.messages.filter((m) => m.kind === 'send' && m.target === 'oc_digest');
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ receiveIdType: 'chat_id', msgType: 'text' });
    expect(String(sent[0]!.content.text)).toContain('Daily digest ready.');
  });
});
