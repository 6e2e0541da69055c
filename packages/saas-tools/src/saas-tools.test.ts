import { describe, expect, it } from 'vitest';
import { useSaasFakes } from './testing/saas-fakes.js';

describe('SaaS account tools against fakes of the five providers', () => {
  const saas = useSaasFakes();
  const { account } = saas;

  it('GitHub: search, read, list repos (reads); open an issue, comment (writes)', async () => {
    const { tools, call } = await account('github');
    expect(tools.map((t) => [t.name, t.writes])).toEqual([
      ['github_search_issues', false],
      ['github_get_issue', false],
      ['github_list_repos', false],
      ['github_create_issue', true],
      ['github_comment', true],
    ]);
    expect((await call('github_search_issues', { query: 'repo:acme/widgets crash' })).content).toBe(
      '1 found; the first 1:\n#7 Crash on empty input [open] https://github.com/acme/widgets/issues/7',
    );
    expect((await call('github_get_issue', { repo: 'acme/widgets', number: 7 })).content).toContain(
      'Steps: send an empty form.',
    );
    expect((await call('github_list_repos')).content).toBe(
      'acme/widgets https://github.com/acme/widgets — Widgets\n' +
        'acme/gadgets (private) https://github.com/acme/gadgets — Gadgets\n' +
        'ana/dotfiles https://github.com/ana/dotfiles',
    );
    // One page of `limit`; GitHub's Link rel="next" is reported, not followed.
    expect((await call('github_list_repos', { limit: 2 })).content).toBe(
      'acme/widgets https://github.com/acme/widgets — Widgets\n' +
        'acme/gadgets (private) https://github.com/acme/gadgets — Gadgets\n' +
        'More repositories exist; ask with a higher limit (up to 50) to see more.',
    );
    const opened = await call('github_create_issue', {
      repo: 'acme/widgets',
      title: 'Add dark mode',
      body: 'Please.',
    });
    expect(opened.content).toMatch(
      /^Opened #\d+ Add dark mode \[open\] https:\/\/github.com\/acme\/widgets\/issues\/\d+$/,
    );
    expect(
      (await call('github_comment', { repo: 'acme/widgets', number: 7, body: 'Reproduced.' }))
        .content,
    ).toMatch(/issuecomment-1$/);
    expect(saas.fake.data.issues.find((i) => i.number === 7)!.comments).toEqual(['Reproduced.']);
    const last = saas.fake.requests.filter((r) => r.provider === 'github').at(-1)!;
    expect(last.headers['x-github-api-version']).toBe('2022-11-28');
    expect(last.headers.accept).toBe('application/vnd.github+json');
    const missing = await call('github_get_issue', { repo: 'acme/widgets', number: 999 });
    expect(missing).toEqual({
      content: 'GitHub found nothing there (HTTP 404): Not Found.',
      isError: true,
    });
  });

  it('Gmail: search, read (reads); draft, send (writes)', async () => {
    const { call } = await account('gmail');
    expect((await call('gmail_search', { query: 'report' })).content).toBe(
      'msg-1: Quarterly report — The report is attached. https://mail.google.com/mail/u/0/#all/msg-1\n' +
        'msg-2: Re: Quarterly report — Thanks for the report. https://mail.google.com/mail/u/0/#all/msg-2',
    );
    // One page of `limit`; a nextPageToken is reported.
    expect((await call('gmail_search', { query: 'report', limit: 1 })).content).toBe(
      'msg-1: Quarterly report — The report is attached. https://mail.google.com/mail/u/0/#all/msg-1\n' +
        'More results exist; narrow the query or raise the limit to see them.',
    );
    expect((await call('gmail_read_message', { id: 'msg-1' })).content).toContain(
      'From: ana@example.com',
    );
    expect(
      (
        await call('gmail_create_draft', {
          to: 'ana@example.com',
          subject: 'Re: report',
          body: 'Thanks!',
        })
      ).content,
    ).toMatch(/^Draft draft-msg-\d+ created/);
    expect(
      (await call('gmail_send', { to: 'bo@example.com', subject: 'Ünïcode hello', body: 'Hi Bo' }))
        .content,
    ).toMatch(/^Sent \(message msg-\d+\)/);
    expect(saas.fake.data.gmail.at(-1)).toMatchObject({
      to: 'bo@example.com',
      subject: 'Ünïcode hello',
      text: 'Hi Bo',
      sent: true,
    });
  });

  it('Google Drive: search, read (a Google Doc exported as text); create a file', async () => {
    const { call } = await account('google_drive');
    expect((await call('drive_search', { query: 'roadmap' })).content).toBe(
      'Roadmap (application/vnd.google-apps.document, id doc-1) https://docs.google.com/document/d/doc-1\n' +
        'Roadmap 2027 (application/vnd.google-apps.document, id doc-2) https://docs.google.com/document/d/doc-2',
    );
    expect((await call('drive_search', { query: 'roadmap', limit: 1 })).content).toMatch(
      /id doc-1\) \S+\nMore results exist/,
    );
    expect(saas.fake.requests.at(-1)?.query.fields).toBe(
      'nextPageToken,files(id,name,mimeType,webViewLink,modifiedTime)',
    );
    expect((await call('drive_read_file', { id: 'doc-1' })).content).toContain('Q1: ship search.');
    expect(
      (await call('drive_create_file', { name: 'notes.txt', content: 'line 1\nline 2' })).content,
    ).toMatch(/^Created notes.txt \(id file-\d+\)/);
    expect(saas.fake.data.files.at(-1)).toMatchObject({
      name: 'notes.txt',
      mimeType: 'text/plain',
      content: 'line 1\nline 2',
    });
    const exported = saas.fake.requests.find((r) => r.path === '/drive/v3/files/doc-1/export');
    expect(exported?.query.mimeType).toBe('text/plain');
  });

  it('Slack: channels, history, search (reads); post (write); its ok:false errors', async () => {
    const { call } = await account('slack');
    // Slack answers fewer channels a page than asked (two here) with a cursor: it is followed.
    expect((await call('slack_list_channels')).content).toBe(
      'C01 #general https://acme.slack.com/archives/C01\n' +
        'C02 #random https://acme.slack.com/archives/C02\n' +
        'C03 #deploys (private) https://acme.slack.com/archives/C03',
    );
    const listed = saas.fake.requests.filter((r) => r.path === '/api/conversations.list').slice(-2);
    expect(listed[1]!.query.cursor).toBeTruthy();
    expect((await call('slack_list_channels', { limit: 2 })).content).toBe(
      'C01 #general https://acme.slack.com/archives/C01\n' +
        'C02 #random https://acme.slack.com/archives/C02\n' +
        'More channels exist; raise the limit (up to 200) to see them.',
    );
    expect((await call('slack_read_history', { channel: 'C01' })).content).toBe(
      '[1700000000.000100] U1: deploy at 5pm https://acme.slack.com/archives/C01/p1700000000000100',
    );
    expect((await call('slack_search_messages', { query: 'deploy' })).content).toContain(
      'https://acme.slack.com/archives/C01/p1700000000000100',
    );
    const posted = await call('slack_post_message', { channel: 'C01', text: 'Deployed.' });
    const ts = saas.fake.data.slack.at(-1)!.ts;
    expect(saas.fake.data.slack.at(-1)).toMatchObject({ text: 'Deployed.' });
    expect(posted.content).toBe(
      `Posted to C01 (message ${ts}). https://acme.slack.com/archives/C01/p${ts.replace('.', '')}`,
    );
    expect(saas.fake.requests.at(-1)).toMatchObject({
      path: '/api/chat.getPermalink',
      query: { channel: 'C01', message_ts: ts },
    });
    // Newest first, one page of `limit`; has_more is reported.
    expect((await call('slack_read_history', { channel: 'C01', limit: 1 })).content).toBe(
      `[${ts}] UBOT: Deployed. https://acme.slack.com/archives/C01/p${ts.replace('.', '')}\n` +
        'Older messages exist; raise the limit (up to 100) to read further back.',
    );
    expect(await call('slack_read_history', { channel: 'C99' })).toEqual({
      content: 'Slack refused the request: channel_not_found.',
      isError: true,
    });
  });

  it('Notion: search, read a page (reads); create a page, append text (writes)', async () => {
    const { call } = await account('notion');
    expect((await call('notion_search', { query: 'team' })).content).toBe(
      'Team notes https://www.notion.so/page-1 (id page-1)',
    );
    expect((await call('notion_read_page', { page_id: 'page-1' })).content).toContain(
      'First note.',
    );
    expect(
      (
        await call('notion_create_page', {
          parent_page_id: 'page-1',
          title: 'Plan',
          text: 'Step one.\n\nStep two.',
        })
      ).content,
    ).toMatch(/^Created "Plan"/);
    expect(saas.fake.data.pages.at(-1)).toMatchObject({
      title: 'Plan',
      blocks: ['Step one.', 'Step two.'],
    });
    expect(
      (await call('notion_append_text', { page_id: 'page-1', text: 'Second note.' })).content,
    ).toBe('Appended 1 paragraph(s) to page page-1: https://www.notion.so/page-1');
    // A page's blocks follow next_cursor (150 blocks: two requests of 100).
    const long = await call('notion_read_page', { page_id: 'page-2' });
    expect(long.content).toContain('Item 1.\nItem 2.');
    expect(long.content).toContain('Item 150.');
    const reads = saas.fake.requests.filter((r) => r.path === '/v1/blocks/page-2/children');
    expect(reads.map((r) => r.query.start_cursor ?? null)).toEqual([null, expect.any(String)]);
    // Search: one page of `limit`; has_more is reported.
    expect((await call('notion_search', { query: '', limit: 1 })).content).toBe(
      'Team notes https://www.notion.so/page-1 (id page-1)\n' +
        'More results exist; narrow the query or raise the limit to see them.',
    );
  });
});
