import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe } from 'vitest';
import {
  testRedisUrl,
  startScriptedModel,
  startServiceProcess,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { accessToken, startAgentCluster, type AgentCluster } from './agent-helpers.js';
import { conversationLifecycleScenarios } from './conversations-lifecycle-scenarios.js';
import { conversationScenarios, type Target } from './conversations-scenarios.js';
import { keyFiles, requireBuild, tempDir } from './helpers.js';

describe('conversations API on two API replicas over PostgreSQL', () => {
  let cluster: AgentCluster;
  let target: Target;
  beforeAll(async () => {
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0' });
    target = {
      urls: [cluster.api[0]!.url, cluster.api[1]!.url],
      model: cluster.model,
      llm: (modelName) => ({ baseUrl: cluster.model.baseUrl, apiKey: 'sk-conv', modelName }),
      token: (userId) => cluster.token(userId),
      sql: (text, params) => cluster.sql(text, params),
      redisKeys: async () => {
        const redis = new Redis(testRedisUrl());
        try {
          const keys: string[] = [];
          for await (const page of redis.scanStream({
            match: `${cluster.env.REDIS_KEY_PREFIX}*`,
          })) {
            keys.push(...(page as string[]));
          }
          return keys;
        } finally {
          redis.disconnect();
        }
      },
    };
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  conversationScenarios(() => target);
  conversationLifecycleScenarios(() => target);
});

describe('conversations API on the all-in-one (PGlite)', () => {
  const MAIN = 'apps/all-in-one/dist/main.js';
  const keys = keyFiles();
  let model: ScriptedModel;
  let service: ServiceProcess;
  let target: Target;
  beforeAll(async () => {
    requireBuild(MAIN);
    model = await startScriptedModel();
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: tempDir('conversations'),
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        AGENT_LLM_MAX_RETRIES: '0',
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      },
    });
    target = {
      urls: [service.url, service.url],
      model,
      llm: (modelName) => ({ baseUrl: model.baseUrl, apiKey: 'sk-conv', modelName }),
      token: (userId) => accessToken(keys.privateKey, userId),
    };
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });
  conversationScenarios(() => target);
  conversationLifecycleScenarios(() => target);
});
