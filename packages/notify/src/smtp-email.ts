import type { Transporter } from 'nodemailer';
import type { EmailSender } from './channels.js';

export interface SmtpEmailOptions {
  /** `smtp://user:pass@host:port` or `smtps://...` (`SMTP_URL`). */
  url: string;
  /** `From:` header (`EMAIL_FROM`). */
  from: string;
  /** Connection and greeting deadline. @default 10_000 */
  timeoutMs?: number;
}

/**
 * Email over SMTP with nodemailer. One pooled transport per process, made at the first send:
 * nodemailer is loaded then, not at import, so a process that sends no email never loads it.
 */
export function createSmtpEmailSender(options: SmtpEmailOptions): EmailSender & {
  close(): void;
} {
  const timeout = options.timeoutMs ?? 10_000;
  // The timeouts go beside the URL, in the transport's own options: the second argument of
  // `createTransport` holds message defaults, where nodemailer never read them (its 30 s
  // greeting and 10 min socket defaults applied instead).
  let transport: Promise<Transporter> | undefined;
  let closed = false;
  const open = async (): Promise<Transporter> => {
    const { default: nodemailer } = await import('nodemailer');
    const made = nodemailer.createTransport({
      url: options.url,
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout,
    });
    // Closed while nodemailer was loading: the transport is closed as soon as it exists.
    if (closed) made.close();
    return made;
  };
  return {
    async send({ to, subject, text }) {
      await (await (transport ??= open())).sendMail({ from: options.from, to, subject, text });
    },
    close: () => {
      closed = true;
      void transport?.then(
        (made) => made.close(),
        () => undefined,
      );
    },
  };
}
