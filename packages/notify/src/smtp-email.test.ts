import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SMTPServer } from 'smtp-server';
import { createSmtpEmailSender } from './smtp-email.js';

const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A real SMTP server on loopback that records what it received. */
async function startSmtp(): Promise<{
  port: number;
  mails: Array<{ to: string[]; body: string }>;
}> {
  const mails: Array<{ to: string[]; body: string }> = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      let body = '';
      stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), body });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => smtp.close(() => resolve())));
  return { port: (smtp.server.address() as AddressInfo).port, mails };
}

/** A TCP server that accepts connections and never sends the SMTP greeting. */
async function startSilentServer(): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

describe('createSmtpEmailSender', () => {
  it('delivers a mail to an SMTP server', async () => {
    const smtp = await startSmtp();
    const sender = createSmtpEmailSender({
      url: `smtp://127.0.0.1:${smtp.port}`,
      from: 'agent@example.test',
    });
    closers.push(async () => sender.close());
    await sender.send({ to: 'user@example.test', subject: 'Report', text: 'All done.' });
    expect(smtp.mails).toHaveLength(1);
    expect(smtp.mails[0]!.to).toEqual(['user@example.test']);
    expect(smtp.mails[0]!.body).toContain('Subject: Report');
    expect(smtp.mails[0]!.body).toContain('All done.');
  });

  it('gives up on a server that never greets after its own timeout, not nodemailer 30 s', async () => {
    const port = await startSilentServer();
    const sender = createSmtpEmailSender({
      url: `smtp://127.0.0.1:${port}`,
      from: 'agent@example.test',
      timeoutMs: 200,
    });
    closers.push(async () => sender.close());
    // The test's own deadline (15 s) sits far below nodemailer's default greeting timeout (30 s),
    // so only a sender that applies `timeoutMs` finishes in time.
    await expect(
      sender.send({ to: 'user@example.test', subject: 'Report', text: 'All done.' }),
    ).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  }, 15_000);
});
