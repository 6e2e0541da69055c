/**
 * A fleet of simulated desktop nodes in a process of its own, so the node side costs the same in
 * every variant and stays outside the measured processes. Each node opens `/ws/desktop`,
 * registers an `echo` tool and answers each `tools/call` at once with `ok <arguments.i>`; a call
 * of the tool `hold` is never answered (the fleet reports `{ holding: id }` over IPC instead), so
 * a benchmark can kill the fleet while a call is in flight.
 *
 *   startFleet(targets) from a benchmark; this file is the child's entry.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { ROOT } from './processes.js';

/** One node socket the fleet opens: a desktop node of `userId` on the gateway at `base` (ws://). */
export interface FleetTarget {
  base: string;
  userId: string;
  token: string;
}

function runFleet(): void {
  process.on('disconnect', () => process.exit(0));
  process.once('message', (message) => {
    const targets = (message as { targets: FleetTarget[] }).targets;
    let ready = 0;
    for (const target of targets) {
      const url = `${target.base}/ws/desktop?client_id=desktop_${target.userId}&node_id=pc`;
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${target.token}` } });
      ws.on('error', (error) => process.send?.({ error: `${url}: ${error.message}` }));
      ws.on('open', () =>
        ws.send(
          JSON.stringify({
            type: 'register',
            node_id: 'pc',
            node_type: 'desktop',
            node_name: 'bench',
            available_tools: ['echo', 'hold'],
          }),
        ),
      );
      ws.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as {
          type?: string;
          method?: string;
          id?: string;
          params?: { name?: string; arguments?: { i?: number } };
        };
        if (frame.method === 'tools/call') {
          if (frame.params?.name === 'hold') {
            process.send?.({ holding: frame.id });
            return;
          }
          const text = `ok ${frame.params?.arguments?.i}`;
          ws.send(
            JSON.stringify({
              jsonrpc: '2.0',
              id: frame.id,
              result: { content: [{ type: 'text', text }], isError: false },
            }),
          );
        } else if (frame.type === 'registered' && ++ready === targets.length) {
          process.send?.({ ready });
        }
      });
    }
  });
}

/** Spawns a fleet process and resolves once every target registered. */
export async function startFleet(targets: FleetTarget[]): Promise<ChildProcess> {
  const fleet = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      fleet.kill('SIGKILL');
      reject(new Error('the fleet did not register within 30 s'));
    }, 30_000);
    fleet.on('message', (m: { ready?: number; error?: string }) => {
      if (m.error) console.error(`fleet: ${m.error}`);
      if (m.ready === targets.length) {
        clearTimeout(timer);
        resolve();
      }
    });
    fleet.send({ targets });
  });
  return fleet;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) runFleet();
