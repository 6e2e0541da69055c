import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { RunInfo } from '@agent-backend/agent-runtime';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { Database } from '@agent-backend/store';
import { createSandboxCapability, type RunFiles, type SandboxCapability } from './capability.js';
import { E2BSandboxProvider } from './cloud/e2b-provider.js';
import { BubblewrapSandboxProvider } from './local/bwrap-provider.js';
import { DockerSandboxProvider } from './local/docker-provider.js';
import { exposedInMountinfo } from './local/mount-source.js';

export interface SandboxDeps {
  readonly db: Database;
  readonly ephemeral: EphemeralStore;
  /** Another capability's files for the run's sandbox, under `dir` (active skills' resources). */
  readonly runFiles?: (run: RunInfo, dir: string) => Promise<RunFiles | undefined>;
  /** Told once, at start, when local sandboxes will see the host paths of the service's folders. */
  readonly logger?: { warn(fields: Record<string, unknown>, message: string): void };
}

/** The configuration keys the capability reads (a subset of the service config). */
export interface SandboxConfig {
  readonly DATA_DIR: string;
  readonly SANDBOX_LOCAL_ROOT?: string | undefined;
  readonly SANDBOX_LOCAL_RUNTIME: 'bwrap' | 'docker';
  readonly SANDBOX_STATE_DIR?: string | undefined;
  readonly SANDBOX_LOCAL_NETWORK: boolean;
  readonly DOCKER_HOST: string;
  readonly SANDBOX_DOCKER_IMAGE: string;
  readonly SANDBOX_DOCKER_USER?: string | undefined;
  readonly SANDBOX_CALL_TIMEOUT_MS: number;
  readonly SANDBOX_MAX_OUTPUT_BYTES: number;
  readonly SANDBOX_IDLE_TIMEOUT_MS: number;
  readonly SANDBOX_MAX_IDLE_MS: number;
  readonly SANDBOX_CREATE_LEASE_MS: number;
  readonly SANDBOX_DEPLOYMENT: string;
  readonly SANDBOX_CLOUD_PROVIDER?: 'e2b' | undefined;
  readonly E2B_API_KEY?: string | undefined;
  readonly E2B_TEMPLATE: string;
  readonly E2B_API_URL?: string | undefined;
  readonly E2B_SANDBOX_URL?: string | undefined;
  readonly E2B_DOMAIN?: string | undefined;
  readonly E2B_SANDBOX_LIFETIME_MS: number;
}

/**
 * Code execution as configured (docs/sandbox.md): local runs in bubblewrap or Docker under
 * `SANDBOX_LOCAL_ROOT`, cloud runs on E2B when `SANDBOX_CLOUD_PROVIDER=e2b`; a mode without a
 * provider gets a notice.
 */
export function sandboxCapability(deps: SandboxDeps, settings: SandboxConfig): SandboxCapability {
  const stateDir = settings.SANDBOX_STATE_DIR ?? join(settings.DATA_DIR, 'sandboxes');
  if (settings.SANDBOX_LOCAL_ROOT && deps.logger) {
    warnOfVisibleHostPaths(deps.logger, stateDir, settings.SANDBOX_LOCAL_ROOT);
  }
  return createSandboxCapability({
    db: deps.db,
    ephemeral: deps.ephemeral,
    ...(settings.SANDBOX_LOCAL_ROOT
      ? {
          local: {
            root: settings.SANDBOX_LOCAL_ROOT,
            provider:
              settings.SANDBOX_LOCAL_RUNTIME === 'docker'
                ? new DockerSandboxProvider({
                    stateDir,
                    host: settings.DOCKER_HOST,
                    image: settings.SANDBOX_DOCKER_IMAGE,
                    network: settings.SANDBOX_LOCAL_NETWORK,
                    user: settings.SANDBOX_DOCKER_USER,
                    idleStopMs: settings.SANDBOX_IDLE_TIMEOUT_MS,
                    ...(deps.logger ? { logger: deps.logger } : {}),
                  })
                : new BubblewrapSandboxProvider({
                    stateDir,
                    network: settings.SANDBOX_LOCAL_NETWORK,
                  }),
          },
        }
      : {}),
    ...(settings.SANDBOX_CLOUD_PROVIDER === 'e2b' && settings.E2B_API_KEY
      ? {
          cloud: new E2BSandboxProvider({
            apiKey: settings.E2B_API_KEY,
            template: settings.E2B_TEMPLATE,
            apiUrl: settings.E2B_API_URL,
            sandboxUrl: settings.E2B_SANDBOX_URL,
            domain: settings.E2B_DOMAIN,
            lifetimeMs: settings.E2B_SANDBOX_LIFETIME_MS,
          }),
        }
      : {}),
    tools: {
      timeoutMs: settings.SANDBOX_CALL_TIMEOUT_MS,
      maxOutputBytes: settings.SANDBOX_MAX_OUTPUT_BYTES,
      maxReadBytes: settings.SANDBOX_MAX_OUTPUT_BYTES,
    },
    ...(deps.runFiles ? { runFiles: deps.runFiles } : {}),
    sessions: {
      deployment: settings.SANDBOX_DEPLOYMENT,
      leaseMs: settings.SANDBOX_CREATE_LEASE_MS,
      idleMs: settings.SANDBOX_IDLE_TIMEOUT_MS,
      maxIdleMs: settings.SANDBOX_MAX_IDLE_MS,
    },
  });
}

/**
 * Sandboxed code reads, in `/proc/self/mountinfo`, each bound folder's path within its file
 * system (local/mount-source.ts): the whole host path unless the folder is on a volume of its own.
 * Knowing it gives no access; the operator is told which paths are shown and how to hide them.
 */
function warnOfVisibleHostPaths(
  logger: NonNullable<SandboxDeps['logger']>,
  stateDir: string,
  localRoot: string,
): void {
  const visible: Record<string, string> = {};
  for (const [name, dir] of [
    ['SANDBOX_STATE_DIR', stateDir],
    ['SANDBOX_LOCAL_ROOT', localRoot],
  ] as const) {
    try {
      mkdirSync(dir, { recursive: true });
      const shown = exposedInMountinfo(dir);
      if (shown !== undefined) visible[name] = shown;
    } catch {
      // Not readable here (no /proc): nothing to say.
    }
  }
  if (Object.keys(visible).length === 0) return;
  logger.warn(
    { code: 'sandbox_host_paths_visible', ...visible },
    'code in local sandboxes can read these host paths in /proc/self/mountinfo (they give it no ' +
      'access); mount each as a file system of its own (not a bind mount of a folder) to show ' +
      'it only paths inside that one',
  );
}
