import { describe, expect, it } from 'vitest';
import { renderConfigurationDoc } from './reference.js';
import { EnvSchema } from './schema.js';

describe('configuration reference', () => {
  it('takes every meaning from the schema, where each variable describes itself', () => {
    const undescribed = Object.entries(EnvSchema.shape)
      .filter(([, field]) => !field.description)
      .map(([name]) => name);
    expect(undescribed).toEqual([]);
    const doc = renderConfigurationDoc();
    expect(doc).toContain(
      `| \`HOST\` | string | \`0.0.0.0\` | ${EnvSchema.shape.HOST.description} |`,
    );
  });

  it('gives each switch the default its field applies when unset (on ones included)', () => {
    const doc = renderConfigurationDoc();
    const defaultOf = (name: string) =>
      new RegExp(`^\\| \`${name}\` \\| boolean \\| \`(true|false)\` \\|`, 'm').exec(doc)?.[1];
    for (const name of ['AGENT_TAKEOVER', 'METRICS_ENABLED', 'MIGRATE_ON_START']) {
      expect(defaultOf(name), name).toBe('true');
    }
    expect(defaultOf('SANDBOX_LOCAL_NETWORK')).toBe('false');
  });
});
