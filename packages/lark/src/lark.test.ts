import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeLark, type FakeLark } from '@agent-backend/testing';
import {
  decryptEvent,
  encryptEvent,
  eventSignature,
  LarkApiError,
  LarkClient,
  verifyEvent,
} from './index.js';

const KEY = 'test-encrypt-key';
const event = {
  schema: '2.0',
  header: {
    event_id: 'ev-1',
    event_type: 'im.message.receive_v1',
    token: 'vtoken',
    create_time: '1',
  },
  event: {
    message: {
      message_id: 'om_1',
      chat_id: 'oc_1',
      message_type: 'text',
      content: '{"text":"hi"}',
    },
  },
};

describe('event decryption', () => {
  it('round-trips and rejects anything malformed', () => {
    const secret = encryptEvent(KEY, JSON.stringify(event));
    expect(JSON.parse(decryptEvent(KEY, secret)!)).toEqual(event);
    expect(decryptEvent('other-key', secret)).toBeUndefined();
    expect(decryptEvent(KEY, 'not base64!')).toBeUndefined();
    expect(decryptEvent(KEY, Buffer.alloc(20).toString('base64'))).toBeUndefined();
  });
});

describe('verifyEvent', () => {
  const now = () => 1_700_000_000_000;
  const ts = String(now() / 1000);
  const signed = (raw: string, overrides: Record<string, string> = {}) => ({
    'x-lark-request-timestamp': ts,
    'x-lark-request-nonce': 'n1',
    'x-lark-signature': eventSignature(ts, 'n1', KEY, raw),
    ...overrides,
  });

  it('accepts a signed encrypted event and returns its plaintext', () => {
    const raw = JSON.stringify({ encrypt: encryptEvent(KEY, JSON.stringify(event)) });
    expect(
      verifyEvent(raw, signed(raw), { encryptKey: KEY, verificationToken: 'vtoken', now }),
    ).toEqual({ ok: true, body: event });
  });

  it('checks the signature against the raw body, and the replay window', () => {
    const raw = JSON.stringify({ encrypt: encryptEvent(KEY, JSON.stringify(event)) });
    const reformatted = JSON.stringify(JSON.parse(raw), null, 1);
    expect(verifyEvent(reformatted, signed(raw), { encryptKey: KEY, now })).toMatchObject({
      ok: false,
      status: 401,
      reason: 'signature does not match',
    });
    expect(verifyEvent(raw, {}, { encryptKey: KEY, now })).toMatchObject({
      ok: false,
      status: 401,
      reason: 'missing signature headers',
    });
    const old = String(now() / 1000 - 301);
    const stale = signed(raw, {
      'x-lark-request-timestamp': old,
      'x-lark-signature': eventSignature(old, 'n1', KEY, raw),
    });
    expect(verifyEvent(raw, stale, { encryptKey: KEY, now })).toMatchObject({
      ok: false,
      status: 401,
      reason: 'signature timestamp outside the replay window',
    });
  });

  it('does not require a signature on the (unsigned) url_verification', () => {
    const challenge = { type: 'url_verification', challenge: 'c-1', token: 'vtoken' };
    const raw = JSON.stringify({ encrypt: encryptEvent(KEY, JSON.stringify(challenge)) });
    expect(verifyEvent(raw, {}, { encryptKey: KEY, verificationToken: 'vtoken', now })).toEqual({
      ok: true,
      body: challenge,
    });
  });

  it('refuses plaintext when a key is set, ciphertext when none is, and wrong tokens', () => {
    const plain = JSON.stringify(event);
    expect(verifyEvent(plain, signed(plain), { encryptKey: KEY, now })).toMatchObject({
      ok: false,
      status: 400,
    });
    const secret = JSON.stringify({ encrypt: encryptEvent(KEY, plain) });
    expect(verifyEvent(secret, {}, {})).toMatchObject({ ok: false, status: 400 });
    expect(verifyEvent(plain, {}, { verificationToken: 'other' })).toMatchObject({
      ok: false,
      status: 401,
      reason: 'verification token does not match',
    });
    expect(verifyEvent(plain, {}, { verificationToken: 'vtoken' })).toEqual({
      ok: true,
      body: event,
    });
    expect(verifyEvent('{', {}, {})).toMatchObject({
      ok: false,
      status: 400,
      reason: 'body is not JSON',
    });
    expect(verifyEvent('[]', {}, {})).toMatchObject({ ok: false, status: 400 });
  });
});

describe('LarkClient against the fake platform', () => {
  let lark: FakeLark;
  beforeAll(async () => {
    lark = await startFakeLark({ appId: 'cli_1', appSecret: 'secret' });
  });
  afterAll(async () => {
    await lark.close();
  });

  it('fetches the tenant token once, caches it, and replies and sends text', async () => {
    const client = new LarkClient({ baseUrl: lark.url, appId: 'cli_1', appSecret: 'secret' });
    const before = lark.tokensIssued;
    await Promise.all([client.replyText('om_1', 'hello'), client.replyText('om_2', 'again')]);
    await client.sendText('chat_id', 'oc_9', 'to the chat');
    expect(lark.tokensIssued - before).toBe(1);
    expect(
      lark.messages
        .slice(-3)
        .map((m) => [m.kind, m.target, m.content.text])
        .sort(),
    ).toEqual([
      ['reply', 'om_1', 'hello'],
      ['reply', 'om_2', 'again'],
      ['send', 'oc_9', 'to the chat'],
    ]);
  });

  it('refreshes a token the platform no longer accepts, once', async () => {
    const client = new LarkClient({ baseUrl: lark.url, appId: 'cli_1', appSecret: 'secret' });
    await client.replyText('om_3', 'one');
    const before = lark.tokensIssued;
    lark.revokeTokens();
    await client.replyText('om_4', 'two');
    expect(lark.tokensIssued - before).toBe(1);
  });

  it('refetches when the cached token expired, and reports platform errors with their code', async () => {
    let clock = 0;
    const client = new LarkClient({
      baseUrl: lark.url,
      appId: 'cli_1',
      appSecret: 'secret',
      now: () => clock,
    });
    await client.tenantToken();
    const before = lark.tokensIssued;
    clock += 7200_000;
    await client.tenantToken();
    expect(lark.tokensIssued - before).toBe(1);

    const wrong = new LarkClient({ baseUrl: lark.url, appId: 'cli_1', appSecret: 'nope' });
    const error = await wrong.replyText('om_5', 'x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LarkApiError);
    expect(error).toMatchObject({ code: 10014 });
    expect(String(error)).not.toContain('nope');
    const down = new LarkClient({
      baseUrl: 'http://127.0.0.1:1',
      appId: 'a',
      appSecret: 'b',
      timeoutMs: 2_000,
    });
    await expect(down.replyText('om_6', 'x')).rejects.toMatchObject({ status: 0 });
  });
});
