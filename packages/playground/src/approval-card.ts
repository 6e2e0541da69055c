import type { AgentEvent } from '@agent-backend/client';
import type { SignedIn } from './panel.js';
import { button, el } from './dom.js';

/** A held tool call: approve, approve with edited arguments, or reject, before `expires_at`. */
export class ApprovalCard {
  readonly node: HTMLElement;
  private readonly countdown = el('p', { class: 'countdown', 'aria-live': 'off' });
  private readonly buttons: HTMLButtonElement[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly request: Extract<AgentEvent, { type: 'approval_request' }>,
    session: () => SignedIn | undefined,
  ) {
    const allowed = new Set(request.allowed_decisions);
    const argsId = `args-${request.request_id}`;
    const args = el('textarea', { id: argsId, rows: '3', spellcheck: 'false' });
    args.value = JSON.stringify(request.tool_args, null, 2);
    args.readOnly = !allowed.has('edit');
    const decide = async (decision: 'approve' | 'edit' | 'reject') => {
      const client = session()?.client;
      if (!client) return;
      const body =
        decision === 'edit'
          ? { decision, tool_args: JSON.parse(args.value) as Record<string, unknown> }
          : { decision };
      for (const b of this.buttons) b.disabled = true;
      try {
        await client.decide(request.request_id, body);
      } catch (error) {
        for (const b of this.buttons) b.disabled = false;
        throw error;
      }
    };
    if (allowed.has('approve')) this.buttons.push(button('Approve', () => decide('approve')));
    if (allowed.has('edit'))
      this.buttons.push(button('Approve with these arguments', () => decide('edit')));
    if (allowed.has('reject')) this.buttons.push(button('Reject', () => decide('reject')));
    this.node = el(
      'div',
      { class: 'card approval', 'data-event': 'approval_request' },
      el('h3', {}, `Approve ${request.tool_name}?`),
      el('label', { for: argsId }, 'Arguments'),
      args,
      this.countdown,
      el('div', { class: 'row' }, ...this.buttons),
    );
    this.tick();
    this.timer = setInterval(() => this.tick(), 1000);
  }

  private tick() {
    const left = Math.round((Date.parse(this.request.expires_at) - Date.now()) / 1000);
    this.countdown.textContent = left > 0 ? `Expires in ${left} s` : 'Expired: counts as rejected';
    if (left <= 0) this.stop();
  }

  decided(outcome: string, message?: string) {
    this.stop();
    for (const b of this.buttons) b.remove();
    this.countdown.textContent = `Decision: ${outcome}${message ? ` (${message})` : ''}`;
    this.node.dataset.outcome = outcome;
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
