import { describe, expect, it } from 'vitest';
import { TOOL_NAME } from '@agent-backend/agent-runtime';
import { ToolNameAllocator } from './tool-names.js';

describe('ToolNameAllocator', () => {
  it('keeps the readable form when it is valid and free', () => {
    const names = new ToolNameAllocator();
    expect(names.allocate('My Files', 'http://a/mcp', 'read.file')).toBe('mcp_My_Files__read_file');
  });

  it('suffixes a stable hash on collision, different for different servers', () => {
    const first = new ToolNameAllocator();
    expect(first.allocate('s', 'http://a/mcp', 'a.b')).toBe('mcp_s__a_b');
    const clash = first.allocate('s', 'http://a/mcp', 'a_b');
    expect(clash).toMatch(/^mcp_s__a_b__[0-9a-f]{8}$/);
    const again = new ToolNameAllocator();
    again.allocate('s', 'http://a/mcp', 'a.b');
    expect(again.allocate('s', 'http://a/mcp', 'a_b')).toBe(clash);
    expect(again.allocate('s', 'http://b/mcp', 'a_b')).not.toBe(clash);
  });

  it('cuts names over 64 characters and keeps them valid and distinct', () => {
    const names = new ToolNameAllocator();
    const long = 'x'.repeat(80);
    const a = names.allocate('server', 'http://a/mcp', `${long}1`);
    const b = names.allocate('server', 'http://a/mcp', `${long}2`);
    expect(a).toHaveLength(64);
    expect(TOOL_NAME.test(a) && TOOL_NAME.test(b)).toBe(true);
    expect(a).not.toBe(b);
  });

  it('never returns a name twice, even for the same tool listed twice', () => {
    const names = new ToolNameAllocator();
    const all = Array.from({ length: 5 }, () => names.allocate('s', 'u', 't'));
    expect(new Set(all).size).toBe(5);
  });
});
