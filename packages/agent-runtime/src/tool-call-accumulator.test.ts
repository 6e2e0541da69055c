import { describe, expect, it } from 'vitest';
import { AgentRunError } from './errors.js';
import { ToolCallAccumulator } from './tool-call-accumulator.js';

describe('ToolCallAccumulator', () => {
  it('joins argument pieces per index, in index order, whatever order they arrive in', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 1, id: 'b', function: { name: 'second', arguments: '' } });
    acc.add({ index: 0, id: 'a', function: { name: 'first', arguments: '{"x"' } });
    acc.add({ index: 1, function: { arguments: '{"y":2}' } });
    acc.add({ index: 0, function: { arguments: ':1}' } });
    expect(acc.finish()).toEqual([
      { id: 'a', name: 'first', arguments: '{"x":1}' },
      { id: 'b', name: 'second', arguments: '{"y":2}' },
    ]);
  });

  it('tolerates servers that omit index, split or repeat names, or send no id', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ id: 'a', function: { name: 'get_', arguments: '{' } });
    acc.add({ function: { name: 'weather', arguments: '}' } });
    acc.add({ id: 'b', function: { name: 'lookup', arguments: '{"q":' } });
    acc.add({ id: 'b', function: { name: 'lookup', arguments: '"x"}' } });
    acc.add({ index: 5, function: { name: 'anonymous', arguments: '{}' } });
    const calls = acc.finish();
    expect(calls.slice(0, 2)).toEqual([
      { id: 'a', name: 'get_weather', arguments: '{}' },
      { id: 'b', name: 'lookup', arguments: '{"q":"x"}' },
    ]);
    expect(calls[2]).toMatchObject({ name: 'anonymous', arguments: '{}' });
    expect(calls[2]!.id).toMatch(/^call_[0-9a-f]{24}$/);
  });

  it('takes arguments sent as a JSON object (not its text) as that object', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 0, id: 'a', function: { name: 'lookup', arguments: { q: 'x', n: 2 } } });
    acc.add({ index: 1, id: 'b', function: { name: 'other', arguments: '' } });
    acc.add({ index: 1, function: { arguments: { deep: { list: [1, 'two'] } } } });
    expect(acc.finish()).toEqual([
      { id: 'a', name: 'lookup', arguments: '{"q":"x","n":2}' },
      { id: 'b', name: 'other', arguments: '{"deep":{"list":[1,"two"]}}' },
    ]);
  });

  it('keeps two calls that share index 0 with different ids apart, pieces following the latest', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 0, id: 'a', function: { name: 'first', arguments: '' } });
    acc.add({ index: 0, function: { arguments: '{"x":' } });
    acc.add({ index: 0, function: { arguments: '1}' } });
    acc.add({ index: 0, id: 'b', function: { name: 'second', arguments: '{"y"' } });
    acc.add({ index: 0, function: { arguments: ':2}' } });
    acc.add({ index: 0, id: 'a', function: { arguments: '' } });
    expect(acc.size).toBe(2);
    expect(acc.finish()).toEqual([
      { id: 'a', name: 'first', arguments: '{"x":1}' },
      { id: 'b', name: 'second', arguments: '{"y":2}' },
    ]);
  });

  it('sorts calls sharing an index by arrival, after lower indexes', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 1, id: 'c', function: { name: 'third', arguments: '{}' } });
    acc.add({ index: 0, id: 'a', function: { name: 'first', arguments: '{}' } });
    acc.add({ index: 0, id: 'b', function: { name: 'second', arguments: '{}' } });
    expect(acc.finish().map((call) => call.id)).toEqual(['a', 'b', 'c']);
  });

  it('refuses a call that never got a name', () => {
    const acc = new ToolCallAccumulator();
    acc.add({ index: 0, id: 'a', function: { arguments: '{}' } });
    expect(() => acc.finish()).toThrow(AgentRunError);
  });
});
