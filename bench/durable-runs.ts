/**
 * Durable runs: (1) the store cost of one step, the statements and the time to store a step
 * (the turn's messages, the session's agent state and, now, the run's resumable state) against
 * today's commit (append the messages, then save the state: two statements), interleaved in the
 * same run on the same connections; (2) suspend-to-resume latency across replicas: a decision
 * posted on replica B for a run suspended on replica A, until the resumed run's first event is
 * in the run log, resumed by B's worker (the `agent-runs` job on BullMQ). Baseline in the same
 * run: today's path, a decision on B for a run held on A (the waiter wakes by the bus).
 *
 *   node --import tsx bench/durable-runs.ts
 *
 * Real components: PostgreSQL (a schema of its own), Redis (bus, ephemeral store, run log,
 * BullMQ), the agent runner, the scripted OpenAI-compatible model. Replicas A and B are two
 * sets of engines (their own connections) in this process.
 *
 * Env: REDIS_URL, DATABASE_URL (test defaults), STEPS (per variant and round, default 200),
 * ROUNDS (default 3), RUNS (suspend/resume samples per variant, default 30).
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { hostRun, processAgentRuns, enqueueRunJob } from '../packages/agent/src/index.js';
import {
  AgentRunner,
  initialRunState,
  runRequest,
  SessionRepository,
  type ChatMessage,
} from '../packages/agent-runtime/src/index.js';
import { loadConfig } from '../packages/config/src/index.js';
import { createEngines, type Engines } from '../packages/engines/src/index.js';
import {
  createApprovalHook,
  createResumeApproval,
  DecisionService,
} from '../packages/hitl/src/index.js';
import { createLogger } from '../packages/logger/src/index.js';
import { migrate, type Database } from '../packages/store/src/index.js';
import {
  createTestSchema,
  startScriptedModel,
  textReply,
  toolCallsReply,
  uniquePrefix,
} from '../packages/testing/src/index.js';

process.env.REDIS_URL ??= 'redis://127.0.0.1:6379';
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
const steps = Number(process.env.STEPS ?? 200);
const rounds = Number(process.env.ROUNDS ?? 3);
const runs = Number(process.env.RUNS ?? 30);
const logger = createLogger({ level: 'silent' });

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};

/** The database, with its statements counted. */
function counted(db: Database): { db: Database; count: () => number } {
  let n = 0;
  const wrapped = {
    ...db,
    dialect: db.dialect,
    query: (sql: string, params?: unknown[]) => {
      n++;
      return db.query(sql, params);
    },
    transaction: db.transaction.bind(db),
    ping: db.ping.bind(db),
    close: db.close.bind(db),
  } as Database;
  return { db: wrapped, count: () => n };
}

async function storeCost(engines: Engines): Promise<void> {
  const { db, count } = counted(engines.db);
  const sessions = new SessionRepository(db);
  const key = {
    userId: 'bench',
    sessionId: `sess_${Date.now()}`,
    runId: `run_bench_${Date.now()}`,
  };
  await sessions.claim(key.sessionId, key.userId);
  await sessions.startRun({ ...key, mode: 'agent', state: initialRunState() });
  const turn = (i: number): ChatMessage[] => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: `c${i}`,
          type: 'function',
          function: { name: 'write_todos', arguments: '{"todos":[]}' },
        },
      ],
    },
    { role: 'tool', tool_call_id: `c${i}`, content: 'Todo list updated: (empty)' },
  ];
  const state = { todos: [{ content: 'one', status: 'pending' as const }] };
  const today: number[] = [];
  const now: number[] = [];
  let todayStatements = 0;
  let nowStatements = 0;
  let i = 0;
  for (let round = 0; round < rounds; round++) {
    for (let s = 0; s < steps; s++) {
      let before = count();
      let t0 = performance.now();
      await sessions.append(key, key.runId, turn(i++));
      await sessions.saveState(key, state);
      today.push(performance.now() - t0);
      todayStatements += count() - before;
      before = count();
      t0 = performance.now();
      await sessions.commitStep(key, turn(i++), state, {
        step: i,
        lastSeq: i * 4,
        usage: { prompt_tokens: i, completion_tokens: i },
      });
      now.push(performance.now() - t0);
      nowStatements += count() - before;
    }
  }
  const total = rounds * steps;
  console.log('\n### Store cost of one step (two messages, agent state, run state)\n');
  console.log(
    '| commit | statements per step | p50 ms | p99 ms | p50 ratio |\n|---|---|---|---|---|',
  );
  const base = pct(today, 50);
  for (const [name, values, statements] of [
    ["today's: append, then save the state (baseline)", today, todayStatements],
    ['commitStep: messages, agent state and run state in one statement', now, nowStatements],
  ] as const) {
    console.log(
      `| ${name} | ${(statements / total).toFixed(2)} | ${pct(values, 50).toFixed(2)} | ${pct(values, 99).toFixed(2)} | ${(pct(values, 50) / base).toFixed(2)} |`,
    );
  }
}

async function suspendResume(a: Engines, b: Engines): Promise<void> {
  const model = await startScriptedModel();
  const runnerOf = (engines: Engines) => {
    const approvals = { ephemeral: engines.ephemeral, bus: engines.bus, logger };
    return new AgentRunner({
      db: engines.db,
      ephemeral: engines.ephemeral,
      logger,
      beforeToolCall: createApprovalHook(approvals),
      resumeApproval: createResumeApproval(approvals),
    });
  };
  const runnerA = runnerOf(a);
  const runnerB = runnerOf(b);
  const worker = await processAgentRuns(
    { engines: b, runner: runnerB, logger, settings: { disconnectGraceMs: 10_000 } },
    8,
  );
  const decisions = new DecisionService({
    ephemeral: b.ephemeral,
    bus: b.bus,
    db: b.db,
    resume: (runId) =>
      enqueueRunJob(
        b.jobs,
        { run_id: runId, kind: 'resume' },
        { jobId: `resume-${runId}-${Date.now()}` },
      ),
  });
  const sample = async (suspend: boolean, n: number): Promise<number> => {
    const name = `bench-durable-${suspend ? 's' : 'h'}-${n}`;
    model.script(name, [
      toolCallsReply([{ id: 'call_1', name: 'write_todos', args: { todos: [{ content: 'x' }] } }]),
      textReply('ok', 1),
    ]);
    const prepared = await runnerA.prepare(
      runRequest({
        userId: 'bench',
        message: 'go',
        model: { baseUrl: model.baseUrl, apiKey: 'sk', name, temperature: 0, chosenBy: 'operator' },
        hitl: { tools: {}, default_requires_interrupt: true, allowlist: [], default_timeout: 600 },
      }),
    );
    const run = hostRun(
      {
        engines: a,
        runner: runnerA,
        logger,
        settings: { disconnectGraceMs: suspend ? 1 : 600_000 },
      },
      prepared,
      { abortWhenAbandoned: false },
    );
    if (!suspend) run.attach(); // a listening client: the run is held on A
    // The approval, from the run log.
    let requestId = '';
    let heldSeq = 0;
    for await (const entry of a.runLog.read(prepared.runId, {
      follow: true,
      idleTimeoutMs: 30_000,
    })) {
      const event = JSON.parse(entry.data) as { type: string; request_id?: string };
      if (event.type === 'approval_request') requestId = event.request_id!;
      heldSeq = entry.seq;
      if (suspend ? event.type === 'suspended' : event.type === 'approval_request') break;
    }
    if (suspend) await run.finished;
    const t0 = performance.now();
    await decisions.submit('bench', requestId, { decision: 'approve' });
    for await (const entry of a.runLog.read(prepared.runId, {
      afterSeq: heldSeq,
      follow: true,
      idleTimeoutMs: 30_000,
    })) {
      if (entry.data.includes('"approval_result"')) break;
    }
    const ms = performance.now() - t0;
    if (!suspend) run.detach();
    for await (const entry of a.runLog.read(prepared.runId, {
      follow: true,
      idleTimeoutMs: 30_000,
    })) {
      if (entry.final) break;
    }
    return ms;
  };
  for (let i = 0; i < 3; i++) {
    await sample(false, -1 - 2 * i);
    await sample(true, -2 - 2 * i);
  }
  const held: number[] = [];
  const resumed: number[] = [];
  for (let i = 0; i < runs; i++) {
    held.push(await sample(false, i));
    resumed.push(await sample(true, i));
  }
  await worker.close();
  await model.close();
  console.log('\n### Decision to the first resumed event, across replicas\n');
  console.log('| path | p50 ms | p99 ms | p50 ratio | p99 ratio |\n|---|---|---|---|---|');
  const b50 = pct(held, 50);
  const b99 = pct(held, 99);
  for (const [name, values] of [
    ['held on replica A, decided on B (baseline: the waiter wakes)', held],
    ["suspended on A, decided on B, resumed by B's worker job", resumed],
  ] as const) {
    console.log(
      `| ${name} | ${pct(values, 50).toFixed(1)} | ${pct(values, 99).toFixed(1)} | ${(pct(values, 50) / b50).toFixed(2)} | ${(pct(values, 99) / b99).toFixed(2)} |`,
    );
  }
}

async function main(): Promise<void> {
  const schema = await createTestSchema('bench_durable');
  const prefix = uniquePrefix('bench-durable');
  const env = {
    ...process.env,
    DATABASE_SCHEMA: schema.schema,
    REDIS_KEY_PREFIX: prefix,
    LOG_LEVEL: 'silent',
  };
  const a = await createEngines(loadConfig('worker', { ...env, INSTANCE_ID: 'bench-a' }), logger);
  const b = await createEngines(loadConfig('worker', { ...env, INSTANCE_ID: 'bench-b' }), logger);
  await migrate(a.db);
  console.log(
    `node ${process.version}, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; ` +
      `store: ${rounds}×${steps} steps per variant; resume: ${runs} runs per variant`,
  );
  try {
    await storeCost(a);
    await suspendResume(a, b);
  } finally {
    await a.close();
    await b.close();
    await schema.drop();
  }
  console.log(
    `load after: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
}

await main();
