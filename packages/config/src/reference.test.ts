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
});
