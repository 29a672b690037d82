// `processed` of long text (runtime/values/text.ts), checked for any input: what comes out is only
// the allow-listed tags written in one canonical form, balanced, with `href` on `<a>` alone and
// only to http, https or mailto; text never opens a tag, and every `&` starts an entity. The HTTP
// tests (writes.test.ts) pin the rendering of particular notes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { processText, safeHref } from '../../runtime/values/text.ts';

const TAG = /^<(\/?)(p|ul|ol|li|dl|dt|dd|blockquote|h[2-6]|em|strong|del|cite|code|a)>|^<a href="([^"<>]*)">|^<br \/>/;

function decode(s: string): string {
  return s.replace(
    /&(amp|quot|lt|gt|#039);/g,
    (_, e: string) => ({ amp: '&', quot: '"', lt: '<', gt: '>', '#039': "'" })[e]!,
  );
}

/** Throws unless `html` is made of canonical allowed tags and escaped text, balanced. */
function assertSafe(html: string, input: string): void {
  const stack: string[] = [];
  let i = 0;
  while (i < html.length) {
    const c = html[i]!;
    if (c === '<') {
      const m = TAG.exec(html.slice(i, i + 2048));
      assert.ok(m, `a tag outside the allow-list at ${i} of ${JSON.stringify(html)} from ${JSON.stringify(input)}`);
      if (m[3] !== undefined) {
        const href = decode(m[3]);
        assert.ok(/^(https?:\/\/|mailto:)/i.test(href), `href ${JSON.stringify(href)} from ${JSON.stringify(input)}`);
        assert.ok(
          !/[\u0000-\u0020\u007f]/.test(href),
          `href with a space or control character: ${JSON.stringify(href)}`,
        );
        stack.push('a');
      } else if (m[0] !== '<br />') {
        if (m[1]) assert.equal(stack.pop(), m[2], `unbalanced </${m[2]}> in ${JSON.stringify(html)}`);
        else stack.push(m[2]!);
      }
      i += m[0].length;
      continue;
    }
    assert.notEqual(c, '>', `a bare > in ${JSON.stringify(html)}`);
    assert.notEqual(c, '"', `a bare " in ${JSON.stringify(html)}`);
    if (c === '&')
      assert.match(
        html.slice(i, i + 40),
        /^&([A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);/,
        `a bare & in ${JSON.stringify(html)}`,
      );
    i++;
  }
  assert.deepEqual(stack, [], `unclosed tags in ${JSON.stringify(html)}`);
}

const pieces = fc.constantFrom(
  '<',
  '>',
  '"',
  "'",
  '&',
  '&quot;',
  '&amp;',
  '&#x3a;',
  '&#58;',
  '&colon;',
  '&Tab;',
  '&#x09;',
  '&#0;',
  '&#1114112;',
  '&lt;',
  '`',
  '=',
  '/',
  '(',
  ')',
  '.',
  ',',
  ' ',
  '\t',
  '\n',
  '\n\n',
  '\r\n',
  '\u0000',
  '\u00a0',
  'x',
  'Tomato',
  'javascript:',
  'JaVaScRiPt:',
  'java\tscript:',
  'data:text/html,',
  'vbscript:',
  'https://',
  'http://',
  'www.',
  'mailto:',
  'seeds.example.com/a?b=1&c=2',
  '<a href=',
  '<a href="',
  "<a href='",
  '<a href=javascript:alert(1)>',
  '<a href="https://ok.example/" onclick="alert(1)">',
  '<a title=">" href="javascript:x">',
  '</a>',
  '<a>',
  '<script>',
  '</script>',
  '<img src=x onerror=alert(1)>',
  '<svg onload=alert(1)>',
  '<iframe src=javascript:x>',
  '<style>',
  '<!--',
  '-->',
  '<![CDATA[',
  '<em>',
  '</em>',
  '<strong>',
  '</strong>',
  '<p>',
  '</p>',
  '<ul>',
  '</ul>',
  '<li>',
  '</li>',
  '<blockquote>',
  '</blockquote>',
  '<h2 id="x">',
  '</h2>',
  '<br>',
  '<br/>',
  '</br>',
  '<code>',
  '<em/>',
  '<EM>',
  '< em>',
  '<em\n>',
  '<a\thref="https://x.example/">',
);
const hostile = fc.oneof(
  fc.array(pieces, { maxLength: 40 }).map((a) => a.join('')),
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 100 }),
);

test('for any text, `default` and `plain_text` give only allow-listed, canonical, balanced markup with safe links', () => {
  fc.assert(
    fc.property(hostile, (input) => {
      assertSafe(processText(input, 'default'), input);
      const plain = processText(input, 'plain_text');
      assertSafe(plain, input);
      assert.ok(
        !/<(?!\/?(p|a)\b|br \/>|a href=)/.test(plain),
        `plain_text keeps no tag of the author's: ${JSON.stringify(plain)}`,
      );
    }),
    { numRuns: 20_000 },
  );
});

test('links only to http, https and mailto, whatever the encoding', () => {
  for (const bad of [
    'javascript:alert(1)',
    ' javascript:alert(1)',
    'java&#x09;script:alert(1)',
    'java&Tab;script:x',
    'javascript&colon;x',
    '&#106;avascript:x',
    'data:text/html,x',
    '//evil.example/',
    '/relative',
    'http:/x\u0000',
  ]) {
    assert.equal(safeHref(bad), null, bad);
  }
  assert.equal(safeHref(' https://a.example/?x=1&amp;y=2 '), 'https://a.example/?x=1&y=2');
  assert.equal(safeHref('MAILTO:farmer@example.com'), 'MAILTO:farmer@example.com');
  assert.equal(safeHref('ht&#x74;ps://a.example/'), 'https://a.example/');
});

test('hostile input costs time in proportion to its length', () => {
  for (const make of [
    (n: number) => '<a '.repeat(n),
    (n: number) => '<em>'.repeat(n),
    (n: number) => `https://a${')'.repeat(n)}`,
    (n: number) => '<a title="'.repeat(n),
    (n: number) => '<'.repeat(n),
    (n: number) => '&'.repeat(n),
    (n: number) => `<a href="${' '.repeat(n)}x">`,
  ]) {
    const started = performance.now();
    processText(make(200_000));
    assert.ok(performance.now() - started < 2_000, `${make(2)}… took too long`);
  }
});
