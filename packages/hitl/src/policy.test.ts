import { describe, expect, it } from 'vitest';
import { HitlConfig } from '@agent-backend/protocol';
import { approvalPolicy } from './policy.js';

const config = (input: unknown) => HitlConfig.parse(input);

describe('approvalPolicy', () => {
  it('never interrupts without hitl_config', () => {
    expect(approvalPolicy(undefined, 'send')).toEqual({ interrupt: false });
  });

  it('interrupts unlisted tools by default with all decisions and the 60 s default', () => {
    expect(approvalPolicy(config({}), 'send')).toEqual({
      interrupt: true,
      allowedDecisions: ['approve', 'edit', 'reject'],
      timeoutMs: 60_000,
    });
    expect(approvalPolicy(config({ default_requires_interrupt: false }), 'send')).toEqual({
      interrupt: false,
    });
  });

  it('lets the allowlist win over a per-tool entry', () => {
    const c = config({ allowlist: ['send'], tools: { send: { requires_interrupt: true } } });
    expect(approvalPolicy(c, 'send')).toEqual({ interrupt: false });
    expect(approvalPolicy(c, 'other').interrupt).toBe(true);
  });

  it('treats enabled: false as HITL off for the tool', () => {
    const c = config({ tools: { send: { enabled: false, requires_interrupt: true } } });
    expect(approvalPolicy(c, 'send')).toEqual({ interrupt: false });
  });

  it('uses the entry, inheriting unset fields from the defaults', () => {
    const c = config({
      default_requires_interrupt: false,
      default_timeout: 5,
      tools: {
        send: { requires_interrupt: true, allowed_decisions: ['approve', 'approve'] },
        read: {},
        book: { timeout: 0.5 },
      },
    });
    expect(approvalPolicy(c, 'send')).toEqual({
      interrupt: true,
      allowedDecisions: ['approve'],
      timeoutMs: 5_000,
    });
    expect(approvalPolicy(c, 'read')).toEqual({ interrupt: false });
    const d = config({ tools: { book: { timeout: 0.5 } } });
    expect(approvalPolicy(d, 'book')).toMatchObject({ interrupt: true, timeoutMs: 500 });
  });

  it('does not read inherited object keys as tool entries', () => {
    expect(approvalPolicy(config({ default_requires_interrupt: false }), 'toString')).toEqual({
      interrupt: false,
    });
  });
});
