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
  // The timeouts go beside the URL, in the transport's own options: the second argument of
  // `createTransport` holds message defaults, where nodemailer never read them (its 30 s
  // greeting and 10 min socket defaults applied instead).
  const transport = nodemailer.createTransport({
    url: options.url,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  });
  return {
    async send({ to, subject, text }) {
      await transport.sendMail({ from: options.from, to, subject, text });
    },
    close: () => transport.close(),
  };
}
