import type { ChildProcess } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { sendJson } from './fake-http.js';

export interface FakeE2BSandbox {
  readonly id: string;
  readonly templateID: string;
  readonly metadata: Record<string, string>;
  state: 'running' | 'paused';
  readonly startedAt: Date;
  endAt: Date;
  readonly autoPause: boolean;
  readonly envdAccessToken: string;
  /** Host directories behind `/home/user` and `/tmp`. */
  readonly home: string;
  readonly tmp: string;
}

export const HOME = '/home/user';
export const ENVD_VERSION = '0.5.11';

/** A sandbox with the processes running in it. */
export interface LiveSandbox extends FakeE2BSandbox {
  readonly processes: Map<number, ChildProcess>;
}

/** What the fake's control API and envd share. */
export interface E2BWorld {
  readonly apiKey: string;
  /** The host directory holding every sandbox's directory. */
  readonly base: string;
  readonly sandboxes: Map<string, LiveSandbox>;
  readonly requests: Array<{ method: string; path: string }>;
  readonly failing: Set<string>;
  /** The settings a test changes while the fake runs. */
  settings(): {
    readonly pageSize: number;
    readonly holdCreates: boolean;
    readonly beforeFileRead: ((host: string) => void | Promise<void>) | undefined;
  };
  /** Resolves when the test releases the held create answers. */
  held(): Promise<void>;
  /** The sandbox, with E2B's lifecycle applied (one past its `endAt` is paused or killed). */
  current(id: string): Promise<LiveSandbox | undefined>;
  stopProcesses(sandbox: LiveSandbox, state: LiveSandbox['state']): void;
  kill(sandbox: LiveSandbox): Promise<void>;
  nextPid(): number;
}

/** E2B's error body `{ code, message }`. */
export function fail(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { code: status, message });
}

/** A unary Connect error: its HTTP status and `{ code, message }`. */
export function connectError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
): void {
  sendJson(res, status, { code, message });
}
