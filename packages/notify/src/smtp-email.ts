import nodemailer from 'nodemailer';
import type { EmailSender } from './channels.js';

export interface SmtpEmailOptions {
  /** `smtp://user:pass@host:port` or `smtps://...` (`SMTP_URL`). */
  url: string;
  /** `From:` header (`EMAIL_FROM`). */
  from: string;
  /** Connection and greeting deadline. @default 10_000 */
  timeoutMs?: number;
}

/** Email over SMTP with nodemailer. One pooled transport per process. */
export function createSmtpEmailSender(options: SmtpEmailOptions): EmailSender & {
  close(): void;
} {
  const timeout = options.timeoutMs ?? 10_000;
  const transport = nodemailer.createTransport(options.url, {
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  } as nodemailer.TransportOptions);
  return {
    async send({ to, subject, text }) {
      await transport.sendMail({ from: options.from, to, subject, text });
    },
    close: () => transport.close(),
  };
}
