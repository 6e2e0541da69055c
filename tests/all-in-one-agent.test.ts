/**
 * The all-in-one builds one agent for its api and worker roles: one skills catalog (and one MCP
 * connection pool, one node tool caller). Each catalog reads `SKILLS_DIR` once and logs every
 * invalid skill it leaves out, so the number of such lines says how many catalogs the process
 * built. An api request and a scheduled (worker) run each wait for their role's catalog.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  startServiceProcess,
  textReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { accessToken } from './agent-helpers.js';
import { keyFiles, post, requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const SECRET = 'one-agent-secret';
const MODEL = 'one-agent-model';

describe('all-in-one agent', () => {
  const keys = keyFiles();
  let model: ScriptedModel;
  let service: ServiceProcess;

  beforeAll(async () => {
    requireBuild(MAIN);
    model = await startScriptedModel();
    const skillsDir = tempDir('one-agent-skills');
    mkdirSync(join(skillsDir, 'Bad_Skill'));
    writeFileSync(join(skillsDir, 'Bad_Skill', 'SKILL.md'), '---\nname: Bad_Skill\n---\nBody\n');
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: tempDir('one-agent'),
        SKILLS_DIR: skillsDir,
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        INTERNAL_API_SECRET: SECRET,
        DEFAULT_LLM_BASE_URL: model.baseUrl,
        DEFAULT_LLM_API_KEY: 'sk-one-agent',
        DEFAULT_LLM_MODEL: MODEL,
      },
    });
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  it('reads the skills once for the api and the worker: one catalog, one agent', async () => {
    // The api's catalog: listing the skills waits for it.
    const token = await accessToken(keys.privateKey, 'olga');
    const listed = await fetch(`${service.url}/api/skills`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(listed.status).toBe(200);
    const names = ((await listed.json()) as { skills: Array<{ name: string }> }).skills.map(
      (skill) => skill.name,
    );
    expect(names).not.toContain('Bad_Skill');

    // The worker's: a scheduled run waits for it before its model request.
    model.script(MODEL, [textReply('Scheduled answer.')]);
    const at = new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000).toISOString();
    const added = await post(
      `${service.url}/scheduled-task/sync`,
      {
        action: 'add',
        task_id: 'one-agent-1',
        task: {
          id: 'one-agent-1',
          user_id: 'olga',
          title: 'One agent',
          prompt: 'Go',
          run_mode: 'auto',
          scheduled_date: at.slice(0, 10),
          scheduled_time: at.slice(11, 19),
        },
      },
      { 'x-internal-secret': SECRET },
    );
    expect(added.status).toBe(200);
    await model.waitForRequests(MODEL, 1, 30_000);

    // Every line the process wrote, once it has exited.
    await service.stop('SIGTERM');
    const invalid = service.stdout.filter((line) => line.includes('invalid skill left out'));
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toContain('Bad_Skill');
  });
});
