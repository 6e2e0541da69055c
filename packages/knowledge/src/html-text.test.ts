import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { htmlToText } from './html-text.js';

const escape = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

describe('htmlToText', () => {
  it('keeps what a reader sees, as paragraphs, and drops scripts, styles and the head', () => {
    const html = `<!doctype html><html><head><title>Refund  policy</title>
      <meta charset="utf-8"><style>p { color: red }</style>
      <script>var secretToken = "abc";</script></head>
      <body><nav>Home &middot; Help</nav>
      <h1>Refunds</h1><p>Refunds are paid within
         <b>five</b> business&nbsp;days.<br>Ask &lt;support&gt; &amp; wait.</p>
      <ul><li>Cards</li><li>Bank transfer</li></ul>
      <table><tr><th>Method</th><th>Days</th></tr><tr><td>Card</td><td>5</td></tr></table>
      <pre>keep   these
  spaces</pre><!-- a comment --><noscript>Enable JavaScript</noscript>
      <template><p>never shown</p></template></body></html>`;
    expect(htmlToText(html)).toBe(
      [
        'Refund policy',
        'Home · Help',
        'Refunds',
        'Refunds are paid within five business\u00a0days.\nAsk <support> & wait.',
        '- Cards\n- Bank transfer',
        'Method | Days\nCard | 5',
        'keep   these\n  spaces',
      ].join('\n\n'),
    );
  });

  it('never fails on broken markup', () => {
    expect(htmlToText('<p>one<div>two</span>three<p>four')).toBe('one\n\ntwothree\n\nfour');
    expect(htmlToText('text <b>bold <i>both</b> after')).toBe('text bold both after');
    expect(htmlToText('<script>never closed <p>hidden')).toBe('');
    expect(htmlToText('')).toBe('');
  });

  it('returns escaped text unchanged but for collapsed whitespace', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
        const collapsed = text.replace(/[ \t\n\r\f]+/g, ' ').trim();
        expect(htmlToText(`<p>${escape(text)}</p>`)).toBe(collapsed);
      }),
      { numRuns: 300 },
    );
  });
});
