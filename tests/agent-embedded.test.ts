import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  runEntry,
  startScriptedModel,
  startServiceProcess,
  textReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';
import { invoke, resume } from './agent-helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';

/** The embedded engine: PGlite, in-process ephemeral store and run log, one process. */
describe('agent invoke on the all-in-one embedded engine', () => {
  const env = {
    DATA_DIR: tempDir('agent-embedded'),
    LOG_LEVEL: 'info',
    AGENT_DISCONNECT_GRACE_MS: '5000',
    // The scripted model listens on loopback, which the SSRF guard refuses by default.
    MCP_ALLOW_PRIVATE_NETWORKS: 'true',
  };
  let service: ServiceProcess;
  let model: ScriptedModel;
  let token: string;
  const llm = (modelName: string) => ({
    baseUrl: model.baseUrl,
    apiKey: 'sk-embedded-1',
    modelName,
  });

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE);
    model = await startScriptedModel();
    service = await startServiceProcess({ entry: MAIN, env });
    const issued = await runEntry(TOKEN_ISSUE, ['alice'], env);
    token = (JSON.parse(issued.stdout) as { accessToken: string }).accessToken;
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  it('streams, stores and continues a session', async () => {
    model.script('x-embedded', [textReply('First.'), textReply('Second.')]);
    const first = await (
      await invoke(service.url, token, { message: 'a', llm_config: llm('x-embedded') })
    ).ended;
    const sessionId = first[0]!.data.session_id as string;
    const second = await (
      await invoke(service.url, token, {
        message: 'b',
        session_id: sessionId,
        llm_config: llm('x-embedded'),
      })
    ).ended;
    expect(second.at(-1)!.data).toMatchObject({ type: 'done', session_id: sessionId });
    expect(model.requests('x-embedded')[1]!.body.messages!.slice(1)).toEqual([
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'First.' },
      { role: 'user', content: 'b' },
    ]);
  });

  it('resumes a dropped stream in the same process, then replays it after the run ended', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    model.script('x-resume', [
      {
        kind: 'stream',
        pieces: [{ text: 'one ' }, { waitFor: held }, { text: 'two' }, { finish: 'stop' }],
      },
    ]);
    const first = await invoke(service.url, token, { message: 'go', llm_config: llm('x-resume') });
    await first.waitFor((e) => e.data.type === 'message_chunk');
    first.close();
    const sessionId = first.events[0]!.data.session_id as string;
    const resumed = await resume(service.url, token, sessionId, first.events.at(-1)!.id);
    release();
    const rest = await resumed.ended;
    expect(rest.map((e) => e.data.type)).toEqual(['message_chunk', 'done']);
    expect(rest[0]!.data.content).toBe('two');
    const replay = await (await resume(service.url, token, sessionId)).ended;
    expect(replay.map((e) => e.data.type)).toEqual([
      'session',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(model.requests('x-resume')[0]!.completed).toBe(true);
  });

  it('refuses a second concurrent run of a session', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    model.script('x-busy', [
      { kind: 'stream', pieces: [{ text: '…' }, { waitFor: held }, { finish: 'stop' }] },
    ]);
    const first = await invoke(service.url, token, { message: 'a', llm_config: llm('x-busy') });
    await first.waitFor((e) => e.data.type === 'message_chunk');
    const sessionId = first.events[0]!.data.session_id as string;
    const second = await invoke(service.url, token, {
      message: 'b',
      session_id: sessionId,
      llm_config: llm('x-busy'),
    });
    expect(second.response.status).toBe(409);
    release();
    expect((await first.ended).at(-1)!.data.type).toBe('done');
  });
});
