/**
 * Memory on the embedded default (the all-in-one on PGlite, no Redis): a memory saved
 * through a run in one session is in the prompt of another session of the same user, never in
 * another user's, and deleting it through the API removes it from the next run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  startServiceProcess,
  textReply,
  toolCallsReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { accessToken, invoke } from './agent-helpers.js';
import { keyFiles, requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const FACT = 'Carol is allergic to peanuts';

describe('long-term memory on the embedded default', () => {
  const keys = keyFiles();
  let model: ScriptedModel;
  let service: ServiceProcess;
  let carol: string;
  let dave: string;

  beforeAll(async () => {
    requireBuild(MAIN);
    model = await startScriptedModel();
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: tempDir('memory-embedded'),
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      },
    });
    [carol, dave] = await Promise.all([
      accessToken(keys.privateKey, 'carol-mem'),
      accessToken(keys.privateKey, 'dave-mem'),
    ]);
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  const run = async (token: string, modelName: string, message: string) => {
    const stream = await invoke(service.url, token, {
      message,
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-mem', modelName },
      enable_memory: true,
    });
    expect((await stream.ended).at(-1)!.data.type).toBe('done');
    return String(model.requests(modelName).at(-1)!.body.messages![0]!.content);
  };

  it('remembers across sessions for its user only, and forgets when deleted', async () => {
    model.script('emb-save', [
      toolCallsReply([{ name: 'memory_save', args: { text: FACT, tags: ['health'] } }]),
      textReply('Noted.'),
    ]);
    await run(carol, 'emb-save', 'Remember: I am allergic to peanuts.');

    model.script('emb-recall', [textReply('No peanuts, then.')]);
    expect(await run(carol, 'emb-recall', 'Suggest a snack with peanuts?')).toContain(FACT);
    model.script('emb-other', [textReply('Sure.')]);
    expect(await run(dave, 'emb-other', 'Suggest a snack with peanuts?')).not.toContain('peanuts');

    const list = (await (
      await fetch(`${service.url}/api/memories`, { headers: { authorization: `Bearer ${carol}` } })
    ).json()) as { memories: Array<{ id: string; text: string }> };
    expect(list.memories.map((m) => m.text)).toEqual([FACT]);
    const removed = await fetch(`${service.url}/api/memories/${list.memories[0]!.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${carol}` },
    });
    expect(removed.status).toBe(204);
    model.script('emb-after', [textReply('Which snack?')]);
    expect(await run(carol, 'emb-after', 'Suggest a snack with peanuts?')).not.toContain(FACT);
  });
});
