import type { Config } from './load-config.js';

/**
 * Settings that are valid but defeat what they set up, for the process to log at start (code
 * `config_warning`). Warnings, not refusals: a deployment that started before an upgrade still
 * starts after it.
 *
 * - A gateway's server pings every `GATEWAY_PING_INTERVAL_MS` 2/3 of `NODE_SILENT_TIMEOUT_MS` or
 *   more apart: the gateway refreshes a node's presence entry from a frame that comes at least a
 *   third of `NODE_SILENT_TIMEOUT_MS` after the entry's last write, so a node whose only frames
 *   are the pongs to those pings (it sends no heartbeat or `ping` of its own) is not refreshed
 *   before its entry expires, and drops out of listings until its next pong. Nodes of the SDK
 *   heartbeat every 20 s and are not affected at the defaults.
 */
export function configWarnings(
  config: Pick<Config, 'role' | 'GATEWAY_PING_INTERVAL_MS' | 'NODE_SILENT_TIMEOUT_MS'>,
): string[] {
  const warnings: string[] = [];
  const ping = config.GATEWAY_PING_INTERVAL_MS;
  const silent = config.NODE_SILENT_TIMEOUT_MS;
  const gateway = config.role === 'gateway' || config.role === 'all-in-one';
  if (gateway && 3 * ping >= 2 * silent) {
    warnings.push(
      `GATEWAY_PING_INTERVAL_MS (${ping}) is 2/3 of NODE_SILENT_TIMEOUT_MS (${silent}) or more: ` +
        'a node that sends no heartbeat of its own is kept in presence by its pongs alone, ' +
        'which then come too late, and drops out of listings; set GATEWAY_PING_INTERVAL_MS ' +
        `below ${Math.ceil((2 * silent) / 3)} or NODE_SILENT_TIMEOUT_MS above ${Math.floor((3 * ping) / 2)}`,
    );
  }
  return warnings;
}
